// SPDX-License-Identifier: MIT
/* Canary runs of the span modes for `sp-record --check --spans=LIST`. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bpf_spans.h"
#include "buf.h"
#include "defs.h"
#include "escape.h"
#include "events.h"
#include "launch.h"
#include "record.h"
#include "sp.h"
#include "spans_canary.h"

int sp_canary_scan(struct sp_reader *r, const char *want, bool audit,
		   struct sp_canary_result *res)
{
	struct sp_buf probes = SP_BUF_INIT;
	struct sp_record rec;
	int rc;

	memset(res, 0, sizeof(*res));
	while ((rc = sp_reader_next(r, &rec)) > 0) {
		const struct sp_defs *d = sp_reader_defs(r);

		switch (rec.kind) {
		case SP_REC_SPAN_START:
			if (!audit && !strcmp(sp_defs_strz(d, rec.mark.method), want))
				res->seen++;
			break;
		case SP_REC_EVENT:
			if (audit && rec.event.kind == SP_EV_AUDIT && rec.event.nfields > 0 &&
			    !strcmp(sp_defs_strz(d, rec.event.field[0].u), want))
				res->seen++;
			break;
		case SP_REC_RUNTIME:
			if (res->runtime[0])
				break;
			snprintf(res->runtime, sizeof(res->runtime), "%s %s, %s",
				 rec.runtime.runtime == SP_RT_RUBY ? "ruby" :
				 rec.runtime.runtime == SP_RT_PYTHON ? "python" : "runtime",
				 sp_defs_strz(d, rec.runtime.version),
				 sp_defs_strz(d, rec.runtime.library));
			break;
		case SP_REC_PROBE:
			sp_buf_printf(&probes, "%s%s %llu", probes.len ? ", " : "",
				      sp_defs_strz(d, rec.probe.name),
				      (unsigned long long)rec.probe.hits);
			if (!res->verdict[0] && *sp_defs_strz(d, rec.probe.verdict))
				snprintf(res->verdict, sizeof(res->verdict), "%s: %s",
					 sp_defs_strz(d, rec.probe.name),
					 sp_defs_strz(d, rec.probe.verdict));
			break;
		default:
			break;
		}
	}
	/* what does not fit is cut */
	snprintf(res->probes, sizeof(res->probes), "%s", sp_buf_str(&probes));
	sp_buf_release(&probes);
	return rc < 0 ? -1 : 0;
}

struct canary {
	unsigned int mode;	/* SP_SPANS_* */
	const char *name;	/* as --spans= spells it */
	const char *want;	/* the method (or audit event) that must be seen */
	bool audit;
	const char *argv[4];	/* the program; NULL argv[0]: sp-record itself */
};

static const struct canary canaries[] = {
	{ SP_SPANS_RUBY, "ruby", SP_CANARY_METHOD, false,
	  { "ruby", "-e", "def " SP_CANARY_METHOD "; end; " SP_CANARY_METHOD, NULL } },
	{ SP_SPANS_RUBY_C, "ruby-c", "upcase", false,
	  { "ruby", "-e", "'" SP_CANARY_METHOD "'.upcase", NULL } },
	{ SP_SPANS_PYTHON, "python", SP_CANARY_METHOD, false,
	  { "python3", "-c", "def " SP_CANARY_METHOD "(): pass\n" SP_CANARY_METHOD "()", NULL } },
	{ SP_SPANS_PY_AUDIT, "python-audit", "open", true,
	  { "python3", "-c", "open('/dev/null').close()", NULL } },
	{ SP_SPANS_USDT, "usdt", SP_CANARY_METHOD, false,
	  { NULL, SP_CANARY_USDT_OPTION, NULL, NULL } },
};

/* Record c's program with sp-record self into the file spool (a memfd: no
 * path in TMPDIR another user could put a FIFO at); the wait status. */
static int record(const char *self, const struct canary *c, bool as_auto, int spool)
{
	char spans[32];
	const char *argv[16];
	int n = 0, i, status;
	pid_t pid;

	snprintf(spans, sizeof(spans), "--spans=%s", as_auto ? "auto" : c->name);
	argv[n++] = self;
	argv[n++] = "--no-samples";
	argv[n++] = "--events=none";
	argv[n++] = spans;
	argv[n++] = "--";
	argv[n++] = c->argv[0] ? c->argv[0] : self;
	for (i = 1; i < 4 && c->argv[i]; i++)
		argv[n++] = c->argv[i];
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		return sp_error_errno("cannot fork"), -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDERR_FILENO);
		}
		dup2(spool, STDOUT_FILENO);
		execv(self, (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

/*
 * What the program found on PATH is when it is a script (pyenv's shims are
 * bash scripts that exec the interpreter pyenv picks), into buf; "" for a
 * binary. The runtime it runs is found when it execs, not now.
 */
static void script_note(const char *full, char *buf, size_t size)
{
	char head[128], esc[4 * sizeof(head)], *nl;
	ssize_t n = -1;
	int fd;

	buf[0] = 0;
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		n = read(fd, head, sizeof(head) - 1);
		close(fd);
	}
	if (n < 3 || head[0] != '#' || head[1] != '!')
		return;
	head[n] = 0;
	nl = strchr(head, '\n');
	if (nl)
		*nl = 0;
	sp_esc_text(esc, sizeof(esc), head, strlen(head), 0);
	snprintf(buf, size, "'%s' is a script (%.80s): the runtime it execs was recorded, "
		 "found at its exec; ", full, esc);
}

/* One canary: prints its line; 1 when it recorded nothing, else 0. */
static int run_one(const char *self, const struct canary *c, bool as_auto, FILE *out)
{
	char note[PATH_MAX + 200];
	const char *prog = c->argv[0] ? c->argv[0] : self;
	struct sp_canary_result res;
	struct sp_reader *r = NULL;
	char full[4096];
	int spool, status, failed = 0;

	if (!sp_launch_find(prog, full, sizeof(full))) {
		fprintf(out, "  %-13s skipped: '%s' not found\n", c->name, prog);
		return 0;
	}

	spool = memfd_create("sp-canary", MFD_CLOEXEC);
	if (spool < 0) {
		fprintf(out, "  %-13s not run: memfd_create: %s\n", c->name, strerror(errno));
		return 1;
	}
	script_note(full, note, sizeof(note));
	status = record(self, c, as_auto, spool);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(out, "  %-13s note: the recording of '%s' exited with status %d\n",
			c->name, full, status < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) :
			128 + WTERMSIG(status));
	if (lseek(spool, 0, SEEK_SET) == 0)
		r = sp_reader_open_fd(spool, "the canary's recording");
	if (!r || sp_canary_scan(r, c->want, c->audit, &res) < 0) {
		fprintf(out, "  %-13s failed: the canary recording is unreadable\n", c->name);
		failed = 1;
	} else if (res.seen) {
		fprintf(out, "  %-13s ok: %s seen%s%s%s%s%s%s\n", c->name, c->want,
			res.runtime[0] || res.probes[0] || note[0] ? " (" : "", note, res.runtime,
			res.runtime[0] && res.probes[0] ? "; " : "", res.probes,
			res.runtime[0] || res.probes[0] || note[0] ? ")" : "");
	} else if (!res.runtime[0] && !res.probes[0]) {
		fprintf(out, "  %-13s no spans: %sno probes in '%s' (%s built without USDT "
			"probes? Debian's are in /usr/bin)\n", c->name, note, full, prog);
		failed = 1;
	} else {
		fprintf(out, "  %-13s no spans: %s%s not seen%s%s%s%s\n", c->name, note, c->want,
			res.verdict[0] ? ": " : "", res.verdict,
			res.probes[0] ? "; probes: " : "", res.probes[0] ? res.probes : "");
		failed = 1;
	}
	if (r)
		sp_reader_close(r);
	close(spool);
	return failed;
}

int sp_spans_canary(const char *self, unsigned int modes, bool as_auto, FILE *out)
{
	size_t i;
	int failed = 0;

	fprintf(out, "spans (a canary program recorded per mode%s):\n",
		as_auto ? ", as --spans=auto records it" : "");
	for (i = 0; i < sizeof(canaries) / sizeof(canaries[0]); i++)
		if (modes & canaries[i].mode)
			failed += run_one(self, &canaries[i], as_auto, out);
	fflush(out);
	return failed;
}
