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
	const char *mode = sp_defs_strz(d, rt->mode), *l = sp_defs_strz(d, rt->library);
	const char *v = sp_defs_strz(d, rt->version);
	const char *name = rt->runtime == SP_RT_RUBY ? "ruby" :
			   rt->runtime == SP_RT_PYTHON ? "python" : "markers";
	char one[sizeof(p->runtimes)], lib[320], ver[64], emode[64];
	size_t len = strlen(p->runtimes);
	bool stacks = !strcmp(mode, "stacks");

	/* the process's own strings (its library's version, its path) */
	sp_esc_text(lib, sizeof(lib), l, strlen(l), 0);
	sp_esc_text(ver, sizeof(ver), v, strlen(v), 0);
	sp_esc_text(emode, sizeof(emode), mode, strlen(mode), 0);
	if (rt->runtime == SP_RT_RUBY)
		p->kinds |= SP_CHECK_RUBY;
	else if (rt->runtime == SP_RT_PYTHON)
		p->kinds |= SP_CHECK_PYTHON;
	if (stacks)
		p->interp = true;
	/* "method-when-traced", "profile-when-set": the runtime's own probes
	 * without StackPulse's hook, which fire only while tracing is on */
	else if (strstr(mode, "-when-"))
		p->spans_partial = true;
	else if (strcmp(mode, "none"))
		p->span_runtime = true;
	if (stacks)
		snprintf(one, sizeof(one), "%s %s (%s): interpreted frames", name, ver, lib);
	else
		snprintf(one, sizeof(one), "%s %s (%s): spans %s", name, ver, lib, emode);
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

/* sp-record at self on the pids for a second, its spool into the file
 * spool (a memfd: no path another user could put something at), its
 * standard error into err, with the span options args (NULL-terminated,
 * at most SP_CHECK_ARGS); the wait status, or -1. */
#define SP_CHECK_ARGS 140
static int record_pids(const char *self, const uint32_t *pids, size_t n,
		       const char *const *args, int spool, int err)
{
	struct sp_buf list = SP_BUF_INIT;
	const char *argv[SP_CHECK_ARGS + 16];
	int i = 0, status;
	pid_t pid;
	size_t k;

	for (k = 0; k < n; k++)
		sp_buf_printf(&list, "%s%u", k ? "," : "", pids[k]);
	argv[i++] = self;
	argv[i++] = "--events=none";
	argv[i++] = "-d";
	argv[i++] = "1";
	argv[i++] = "-p";
	argv[i++] = sp_buf_str(&list);
	for (k = 0; args && args[k] && k < SP_CHECK_ARGS; k++)
		argv[i++] = args[k];
	argv[i] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		sp_buf_release(&list);
		return sp_error_errno("cannot fork");
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0)
			dup2(null, STDIN_FILENO);
		dup2(spool, STDOUT_FILENO);
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
	bool cut = got == (ssize_t)sizeof(buf) - 1;

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
	if (*line || cut)
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
	if (p->samples && p->interp && !p->interp_samples) {
		fprintf(out, "  %s: missing: no sample had its interpreted frames\n", who);
		missing = 1;
	}
	/* spans asked of a runtime it has */
	if (!(method_spans & p->kinds))
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

int sp_check_pids_record(const char *self, const uint32_t *pids, size_t n,
			 const char *const *args, unsigned int method_spans, FILE *out)
{
	struct sp_buf with = SP_BUF_INIT;
	struct sp_check_pid *res;
	const char *opts;
	struct sp_reader *r = NULL;
	int spool, err, status, missing = 0;
	size_t i, got = n, runtimes = 0;
	bool failed;

	spool = memfd_create("sp-check-spool", MFD_CLOEXEC);
	err = memfd_create("sp-check-stderr", MFD_CLOEXEC);
	if (spool < 0 || err < 0) {
		sp_error_errno("memfd_create");
		if (spool >= 0)
			close(spool);
		if (err >= 0)
			close(err);
		return -1;
	}
	for (i = 0; args && args[i]; i++)
		sp_buf_printf(&with, " %s", args[i]);
	opts = with.len ? sp_buf_str(&with) + 1 : "the default spans";
	fprintf(out, "-p: what a recording gets, recorded for 1 s with %s:\n", opts);
	status = record_pids(self, pids, n, args, spool, err);
	/* 1: some records skipped, said; more: the recording failed */
	failed = status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1;
	res = sp_xcalloc(n + SP_CHECK_CHILDREN, sizeof(*res));
	for (i = 0; i < n; i++)
		res[i].pid = pids[i];
	if (failed) {
		fprintf(out, "  failed: the recording of the -p processes ended with status %d "
			"(see what sp-record said): nothing is known of what one would get\n",
			status < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) :
			128 + WTERMSIG(status));
		missing = (int)n;
	} else if (lseek(spool, 0, SEEK_SET) < 0 ||
		   !(r = sp_reader_open_fd(spool, "the -p processes' recording")) ||
		   sp_check_pids_scan(r, res, &got, n + SP_CHECK_CHILDREN) < 0) {
		fprintf(out, "  failed: the recording is unreadable\n");
		missing = (int)n;
	} else {
		for (i = 0; i < got; i++) {
			missing += print_pid(&res[i], opts, method_spans, out);
			runtimes += (res[i].kinds & method_spans) != 0;
		}
		/* auto names no runtime: none found is no loss */
		if (method_spans && !runtimes && !strstr(opts, "--spans=auto")) {
			fprintf(out, "  missing: no %s in the -p processes or those they started "
				"in that second, for %s\n", method_spans == SP_CHECK_RUBY ? "Ruby" :
				method_spans == SP_CHECK_PYTHON ? "Python" : "Ruby or Python", opts);
			missing++;
		}
	}
	print_said(err, out);
	if (r)
		sp_reader_close(r);
	sp_buf_release(&with);
	free(res);
	close(err);
	close(spool);
	fflush(out);
	return missing;
}
