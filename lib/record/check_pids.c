// SPDX-License-Identifier: MIT
/* What --check says of the -p processes (check_pids.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "check_pids.h"
#include "defs.h"
#include "escape.h"
#include "proc_pin.h"
#include "procfs.h"
#include "record.h"
#include "sp.h"

int sp_check_pids(const uint32_t *pids, size_t n, FILE *out)
{
	char why[128], comm[64], exe[4096], ecomm[256], eexe[1024];
	struct sp_proc_pin pin;
	int status = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (sp_proc_pin_open(&pin, pids[i])) {
			sp_pidfd_failure(pids[i], errno, why, sizeof(why));
			sp_error("pid %u: %s", pids[i], why);
			status = -1;
			continue;
		}
		if (sp_procfs_comm(pids[i], pids[i], comm, sizeof(comm)))
			comm[0] = 0;
		if (sp_procfs_exe(pids[i], exe, sizeof(exe)))
			snprintf(exe, sizeof(exe), "executable not readable (a kernel thread has none)");
		sp_esc_text(ecomm, sizeof(ecomm), comm, strlen(comm), 0);
		sp_esc_text(eexe, sizeof(eexe), exe, strlen(exe), 0);
		fprintf(out, "-p %u (%s, %s): can be attached to\n", pids[i], ecomm, eexe);
		sp_proc_pin_close(&pin);
	}
	return status;
}

/* pid's entry in res[*n], added as a child while *n < cap; NULL if none. */
static struct sp_check_pid *pid_result(struct sp_check_pid *res, size_t *n, size_t cap,
				       uint64_t pid)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (res[i].pid == pid)
			return &res[i];
	if (*n >= cap || !pid || pid > UINT32_MAX)
		return NULL;
	memset(&res[*n], 0, sizeof(res[*n]));
	res[*n].pid = (uint32_t)pid;
	res[*n].child = true;
	return &res[(*n)++];
}

/* Whether stack holds an interpreted frame (a Python function, a Ruby
 * method) among its innermost 256. */
static bool stack_has_interp(const struct sp_defs *d, uint64_t stack)
{
	uint64_t frames[256];
	int n, i;

	/* leaf first: the innermost 256 (its full depth may be more) */
	n = sp_defs_stack_frames(d, stack, frames, sizeof(frames) / sizeof(frames[0]));
	if (n > (int)(sizeof(frames) / sizeof(frames[0])))
		n = sizeof(frames) / sizeof(frames[0]);
	for (i = 0; i < n; i++) {
		const struct sp_frame *f = sp_defs_frame(d, frames[i]);

		if (f && f->mode == SP_FRAME_INTERP)
			return true;
	}
	return false;
}

static void add_runtime(struct sp_check_pid *p, const struct sp_defs *d,
			const struct sp_runtime_info *rt)
{
	const char *mode = sp_defs_strz(d, rt->mode);
	char one[sizeof(p->runtimes)], lib[320];
	size_t len = strlen(p->runtimes);
	const char *l = sp_defs_strz(d, rt->library);

	sp_esc_text(lib, sizeof(lib), l, strlen(l), 0);
	if (!strcmp(mode, "stacks"))
		snprintf(one, sizeof(one), "%s %s (%s): interpreted frames",
			 rt->runtime == SP_RT_RUBY ? "ruby" : "python",
			 sp_defs_strz(d, rt->version), lib);
	else
		snprintf(one, sizeof(one), "%s %s (%s): spans %s",
			 rt->runtime == SP_RT_RUBY ? "ruby" : rt->runtime == SP_RT_PYTHON ?
			 "python" : "markers", sp_defs_strz(d, rt->version), lib, mode);
	/* "method-when-traced", "profile-when-set": the runtime's own probes
	 * without StackPulse's hook, which fire only while tracing is on */
	if (strcmp(mode, "stacks") && strcmp(mode, "none") && !strstr(mode, "-when-"))
		p->span_runtime = true;
	if (strstr(mode, "-when-"))
		p->spans_partial = true;
	if (strstr(p->runtimes, one))
		return;
	snprintf(p->runtimes + len, sizeof(p->runtimes) - len, "%s%s", len ? "; " : "", one);
}

int sp_check_pids_scan(struct sp_reader *r, struct sp_check_pid *res, size_t *n, size_t cap)
{
	struct sp_check_pid *p;
	struct sp_record rec;
	int rc;

	while ((rc = sp_reader_next(r, &rec)) > 0) {
		const struct sp_defs *d = sp_reader_defs(r);

		switch (rec.kind) {
		case SP_REC_SAMPLE:
			if (!(p = pid_result(res, n, cap, rec.sample.pid)))
				break;
			p->samples++;
			if (rec.sample.stack && stack_has_interp(d, rec.sample.stack))
				p->interp_samples++;
			break;
		case SP_REC_SPAN_START:
			if ((p = pid_result(res, n, cap, rec.mark.pid)))
				p->spans++;
			break;
		case SP_REC_RUNTIME:
			if ((p = pid_result(res, n, cap, rec.runtime.pid)))
				add_runtime(p, d, &rec.runtime);
			break;
		case SP_REC_LOST:
			if (rec.lost.what == SP_LOST_UNPROBED &&
			    (p = pid_result(res, n, cap, rec.lost.pid)))
				p->unprobed += rec.lost.count;
			break;
		default:
			break;
		}
	}
	return rc < 0 ? -1 : 0;
}

/* sp-record at self on the pids for a second into spool, its standard
 * error into err; the wait status, or -1. */
static int record_pids(const char *self, const uint32_t *pids, size_t n, const char *spans,
		       const char *spool, int err)
{
	struct sp_buf list = SP_BUF_INIT;
	const char *argv[16];
	int i = 0, status;
	pid_t pid;
	size_t k;

	for (k = 0; k < n; k++)
		sp_buf_printf(&list, "%s%u", k ? "," : "", pids[k]);
	argv[i++] = self;
	argv[i++] = "--events=none";
	argv[i++] = "-d";
	argv[i++] = "1";
	argv[i++] = "-o";
	argv[i++] = spool;
	argv[i++] = "-p";
	argv[i++] = sp_buf_str(&list);
	if (spans)
		argv[i++] = spans;
	argv[i] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		sp_buf_release(&list);
		return sp_error_errno("cannot fork");
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
		}
		dup2(err, STDERR_FILENO);
		execv(self, (char *const *)argv);
		_exit(127);
	}
	sp_buf_release(&list);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/* What sp-record said while it recorded (already escaped by it), indented;
 * at most SP_CHECK_SAID_LINES lines. */
#define SP_CHECK_SAID_LINES 24
static void print_said(int err, FILE *out)
{
	char buf[16384], *line, *next;
	unsigned int lines = 0;
	ssize_t got = pread(err, buf, sizeof(buf) - 1, 0);

	if (got <= 0)
		return;
	buf[got] = 0;
	fprintf(out, "  what sp-record said:\n");
	for (line = buf; *line && lines < SP_CHECK_SAID_LINES; line = next, lines++) {
		next = strchr(line, '\n');
		if (!next)
			next = line + strlen(line);
		else
			*next++ = 0;
		fprintf(out, "    %s\n", line);
	}
	if (*line)
		fprintf(out, "    (more not shown)\n");
}

/* The lines of one process; 1 when it got less than was asked. */
static int print_pid(const struct sp_check_pid *p, const char *spans, unsigned int method_spans,
		     FILE *out)
{
	char who[64];
	int missing = 0;

	snprintf(who, sizeof(who), "pid %u%s", p->pid, p->child ? " (started by a -p one)" : "");
	if (p->child && !p->runtimes[0] && !p->spans)
		return 0;
	fprintf(out, "  %s: %s\n", who, p->runtimes[0] ? p->runtimes :
		"no Python or Ruby found in it (native stacks only)");
	if (!p->samples)
		fprintf(out, "  %s: no samples: it did not run on a CPU in that second\n", who);
	else
		fprintf(out, "  %s: %llu samples, %llu with interpreted frames\n", who,
			(unsigned long long)p->samples, (unsigned long long)p->interp_samples);
	if (p->samples && strstr(p->runtimes, "interpreted frames") && !p->interp_samples) {
		fprintf(out, "  %s: missing: no sample had its interpreted frames\n", who);
		missing = 1;
	}
	/* spans asked of a runtime it has (add_runtime()'s words) */
	if (!(((method_spans & SP_CHECK_RUBY) && strstr(p->runtimes, "ruby ")) ||
	      ((method_spans & SP_CHECK_PYTHON) && strstr(p->runtimes, "python "))))
		return missing;
	if (p->spans_partial && !p->span_runtime) {
		fprintf(out, "  %s: missing: %llu spans for %s, %s: its runtime's own probes, "
			"without StackPulse's hook, fire only while tracing is on in it or for "
			"frames C code enters (see what sp-record said)\n", who,
			(unsigned long long)p->spans, spans, p->spans ? "a partial view" : "none");
		return 1;
	}
	if (p->spans)
		fprintf(out, "  %s: %llu spans\n", who, (unsigned long long)p->spans);
	else if (p->span_runtime && !p->unprobed)
		fprintf(out, "  %s: 0 spans in that second (its probes are set: none of its "
			"methods ran then)\n", who);
	if (!p->spans && (!p->span_runtime || p->unprobed)) {
		fprintf(out, "  %s: missing: no spans for %s (%s: see what sp-record said)\n",
			who, spans, p->unprobed ? "refused or not probed" : "not probed");
		missing = 1;
	}
	return missing;
}

/* At most this many processes the -p ones started are looked at. */
#define SP_CHECK_CHILDREN 64

int sp_check_pids_record(const char *self, const uint32_t *pids, size_t n, const char *spans,
			 unsigned int method_spans, FILE *out)
{
	const char *tmp = getenv("TMPDIR");
	struct sp_check_pid *res;
	struct sp_reader *r;
	char spool[4096];
	int fd, err, status, missing = 0;
	size_t i, got = n, runtimes = 0;

	snprintf(spool, sizeof(spool), "%s/sp-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	fd = mkstemp(spool);
	if (fd < 0)
		return sp_error_errno("cannot create '%s'", spool);
	close(fd);
	err = memfd_create("sp-check-stderr", MFD_CLOEXEC);
	if (err < 0) {
		unlink(spool);
		return sp_error_errno("memfd_create");
	}
	fprintf(out, "-p: what a recording gets, recorded for 1 s with%s%s:\n",
		spans ? " " : " the default spans", spans ? spans : "");
	status = record_pids(self, pids, n, spans, spool, err);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1)
		fprintf(out, "  note: the recording exited with status %d\n",
			status < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) :
			128 + WTERMSIG(status));
	res = sp_xcalloc(n + SP_CHECK_CHILDREN, sizeof(*res));
	for (i = 0; i < n; i++)
		res[i].pid = pids[i];
	r = sp_reader_open((char *[]){ spool }, 1);
	if (!r || sp_check_pids_scan(r, res, &got, n + SP_CHECK_CHILDREN) < 0) {
		fprintf(out, "  failed: the recording is unreadable\n");
		missing = (int)n;
	} else {
		for (i = 0; i < got; i++) {
			missing += print_pid(&res[i], spans, method_spans, out);
			runtimes += (strstr(res[i].runtimes, "ruby ") &&
				     (method_spans & SP_CHECK_RUBY)) ||
				    (strstr(res[i].runtimes, "python ") &&
				     (method_spans & SP_CHECK_PYTHON));
		}
		/* auto names no runtime: none found is no loss */
		if (method_spans && !runtimes && strcmp(spans, "--spans=auto")) {
			fprintf(out, "  missing: no %s in the -p processes or those they started "
				"in that second, for %s\n", method_spans == SP_CHECK_RUBY ? "Ruby" :
				method_spans == SP_CHECK_PYTHON ? "Python" : "Ruby or Python", spans);
			missing++;
		}
	}
	print_said(err, out);
	if (r)
		sp_reader_close(r);
	free(res);
	close(err);
	unlink(spool);
	fflush(out);
	return missing;
}
