// SPDX-License-Identifier: MIT
/*
 * The command trigger (triggers.h): /bin/sh -c COMMAND, run every
 * --trigger-every in a process group of its own, its output read from a
 * non-blocking pipe the recorder's loop polls, killed (the whole group)
 * past its timeout. It fires when a run exits 0; the first line of what
 * it printed is the detail. Nothing here waits: the recorder never stops
 * recording for the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "escape.h"
#include "launch.h"
#include "sp.h"
#include "triggersP.h"

/* How soon to look again at a command killed, or whose output ended. */
#define REAP_RETRY_NS	10000000

static void child(struct sp_triggers *t, int out)
{
	sigset_t none;
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (null >= 0)
		dup2(null, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	sp_launch_own_fds_cloexec();	/* none of sp-record's: rings, spool */
	execl("/bin/sh", "sh", "-c", t->o.cmd, (char *)NULL);
	_exit(127);
}

static void start_run(struct sp_triggers *t, uint64_t now)
{
	int p[2];
	pid_t pid;

	t->next_run = now + t->o.every_ns;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK)) {
		if (!t->st.cmd_failed++)
			sp_warn("trigger command: pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(t, p[1]);
	}
	close(p[1]);
	if (pid < 0) {
		if (!t->st.cmd_failed++)
			sp_warn("trigger command: fork: %s", strerror(errno));
		close(p[0]);
		return;
	}
	setpgid(pid, pid);	/* as the child does: whichever runs first */
	t->pid = pid;
	t->fd = p[0];
	t->started = now;
	t->outlen = 0;
	t->killed = false;
	t->st.cmd_runs++;
}

/* Read what is there; at the end of the output, close it. More than
 * SP_TRIG_CMD_OUT bytes are read and dropped, so the command never blocks
 * on a full pipe. */
static void drain(struct sp_triggers *t)
{
	char junk[4096], *dst;
	size_t room;
	ssize_t k;

	while (t->fd >= 0) {
		room = sizeof(t->out) - 1 - t->outlen;
		dst = room ? t->out + t->outlen : junk;
		k = read(t->fd, dst, room ? room : sizeof(junk));
		if (k > 0 && room) {
			t->outlen += (size_t)k;
			continue;
		}
		if (k > 0 || (k < 0 && errno == EINTR))
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		close(t->fd);	/* end of output, or an error */
		t->fd = -1;
	}
}

/* The detail of a run that exited 0: its first line, or what ran. */
static void run_detail(struct sp_triggers *t, char *detail, size_t n)
{
	size_t len;

	t->out[t->outlen] = 0;
	len = strcspn(t->out, "\n");
	if (len && n)
		sp_esc_text(detail, n, t->out, len, 0);
	else if (n)
		sp_esc_text(detail, n, t->o.cmd, strlen(t->o.cmd), 0);
}

const char *sp_triggers_cmd_poll(struct sp_triggers *t, uint64_t now, char *detail, size_t n)
{
	int ws;
	pid_t r;

	if (!t->o.cmd)
		return NULL;
	if (!t->pid) {
		if (now >= t->next_run)
			start_run(t, now);
		return NULL;
	}
	t->last_poll = now;
	drain(t);
	r = waitpid(t->pid, &ws, WNOHANG);
	if (r > 0 || (r < 0 && errno == ECHILD)) {
		drain(t);
		if (t->fd >= 0)
			close(t->fd);	/* a child of it holds the pipe: not ours to wait for */
		t->fd = -1;
		t->pid = 0;
		if (r > 0 && !t->killed && WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
			run_detail(t, detail, n);
			t->st.cmds++;
			return "cmd";
		}
		return NULL;
	}
	if (!t->killed && now >= t->started + t->o.timeout_ns) {
		if (!t->st.cmd_timeouts++)
			sp_warn("trigger command still running after %.3f s: killed (and every "
				"later run that takes as long)", (double)t->o.timeout_ns / 1e9);
		kill(-t->pid, SIGKILL);
		kill(t->pid, SIGKILL);
		t->killed = true;
	}
	return NULL;
}

int sp_triggers_cmd_fd(const struct sp_triggers *t)
{
	return t->fd;
}

uint64_t sp_triggers_cmd_deadline(const struct sp_triggers *t)
{
	if (!t->o.cmd)
		return UINT64_MAX;
	if (!t->pid)
		return t->next_run;
	/* killed, or its output closed: the run is about over, look again soon */
	if (t->killed || t->fd < 0)
		return t->last_poll + REAP_RETRY_NS;
	return t->started + t->o.timeout_ns;
}

void sp_triggers_cmd_stop(struct sp_triggers *t)
{
	if (t->pid) {
		kill(-t->pid, SIGKILL);
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
		t->pid = 0;
	}
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}
