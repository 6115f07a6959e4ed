/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * spawn.h - run a shell command in the conditions a test needs, with no
 * outside tool: on a pseudo-terminal, as nobody, without address-space
 * randomization (util-linux's script and setpriv are busybox applets in
 * the arm64 guests).
 */
#ifndef _GNU_SOURCE
#error "spawn.h: define _GNU_SOURCE first (setresuid())"
#endif
#ifndef __AA_TESTS_SPAWN_H
#define __AA_TESTS_SPAWN_H

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <time.h>
#include "common.h"

#define T_TTY		1U	/* stdin, stdout and stderr on a pseudo-terminal */
#define T_NOBODY	2U	/* uid and gid 65534, no supplementary groups: what
				 * it runs must be reachable by nobody (or run
				 * through an fd: /proc/self/fd/N) */
#define T_NO_ASLR	4U	/* personality(ADDR_NO_RANDOMIZE) */

static inline double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run `sh -c cmd` in a session of its own; what it writes to stdout and
 * stderr into out (NUL-terminated; past sz - 1 bytes, read and dropped).
 * secs > 0: SIGINT to its process group after secs seconds, SIGKILL 10 s
 * later. Returns its wait status. */
static inline int t_spawn(const char *cmd, unsigned int flags, double secs, char *out, size_t sz)
{
	double sent = 0, now, end = secs > 0 ? t_now() + secs : 0;
	int rfd, wfd, p[2], st;
	size_t len = 0;
	char drop[512];
	pid_t pid;
	ssize_t n;
	bool keep;

	if (flags & T_TTY)
		cr_assert_eq(openpty(&rfd, &wfd, NULL, NULL, NULL), 0, "openpty: %s", strerror(errno));
	else {
		cr_assert_eq(pipe(p), 0);
		rfd = p[0];
		wfd = p[1];
	}
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (!pid) {
		int in = (flags & T_TTY) ? wfd : open("/dev/null", O_RDONLY);

		close(rfd);
		if (setsid() < 0 || ((flags & T_TTY) && ioctl(wfd, TIOCSCTTY, 0)) ||
		    dup2(in, 0) < 0 || dup2(wfd, 1) < 0 || dup2(wfd, 2) < 0)
			_exit(126);
		if ((flags & T_NO_ASLR) && personality(ADDR_NO_RANDOMIZE) < 0)
			_exit(126);
		if ((flags & T_NOBODY) &&
		    (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		     setresuid(65534, 65534, 65534)))
			_exit(126);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(wfd);
	for (;;) {
		struct pollfd pfd = { .fd = rfd, .events = POLLIN };

		now = t_now();
		if (end && !sent && now >= end) {
			kill(-pid, SIGINT);
			sent = now;
		} else if (sent && now >= sent + 10) {
			kill(-pid, SIGKILL);
			sent = now + 3600;
		}
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		/* a pipe reads 0 at its end, a pty EIO once the last holder of
		 * its other side is gone */
		keep = out && len + 1 < sz;
		n = keep ? read(rfd, out + len, sz - 1 - len) : read(rfd, drop, sizeof(drop));
		if (n <= 0)
			break;
		if (keep)
			len += n;
	}
	close(rfd);
	if (out)
		out[len] = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return st;
}

#endif /* __AA_TESTS_SPAWN_H */
