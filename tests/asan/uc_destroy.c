// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * uc_destroy.c - under AddressSanitizer (mk/asan.mk): threads that exit
 * while the heap handle they used is destroyed. Each round attaches a
 * handle to one loaded object, starts detached threads that allocate and
 * free through their user caches (user/user_cache.c) and then exit, and
 * destroys the handle as soon as the last of them made its last call:
 * the threads' cache records are closed and freed by their exits and by
 * aa_heap__destroy() at the same time. Exit 0 with no ASan report, or
 * non-zero.
 *
 *   uc_destroy [ROUNDS [THREADS]]   (default 20 rounds of 8 threads)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "arena_alloc.h"
#include "aa_shared.h"	/* before the skeleton: the library's globals */
#include "arena_alloc.skel.h"

static struct aa_heap *h;
static int calls_done, exited, failed;

/* A key of the program's own, created before the library's: its
 * destructor runs in the first round of a thread's exit, before the
 * library's, and counts the exits. */
static pthread_key_t exit_key;

static void count_exit(void *v)
{
	(void)v;
	__atomic_fetch_add(&exited, 1, __ATOMIC_RELEASE);
}

static void *worker(void *arg)
{
	__u64 p[32];
	int i, n = (int)(long)arg;

	pthread_setspecific(exit_key, (void *)1);
	for (i = 0; i < 32; i++)
		p[i] = aa_heap__malloc(h, 16 + 16 * ((i + n) % 8));
	for (i = 0; i < 32; i++)
		if (!p[i] || aa_heap__free(h, p[i]))
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&calls_done, 1, __ATOMIC_RELEASE);
	return NULL;	/* the library's key destructor closes the cache */
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20, threads = argc > 2 ? atoi(argv[2]) : 8;
	struct arena_alloc *skel;
	pthread_attr_t attr;
	pthread_t t;
	int r, i;

	if (pthread_key_create(&exit_key, count_exit))
		return 2;
	skel = arena_alloc__open_and_load();
	if (!skel) {
		perror("uc_destroy: loading the library's object");
		return 2;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (r = 0; r < rounds; r++) {
		AA_OPTS(aa_heap_opts, o, .init_bytes = 2 << 20);

		h = aa_heap__attach(skel->obj, &o);
		if (!h) {
			perror("uc_destroy: aa_heap__attach");
			return 2;
		}
		__atomic_store_n(&calls_done, 0, __ATOMIC_RELAXED);
		for (i = 0; i < threads; i++)
			if (pthread_create(&t, &attr, worker, (void *)(long)i))
				return 2;
		while (__atomic_load_n(&calls_done, __ATOMIC_ACQUIRE) < threads)
			sched_yield();
		aa_heap__destroy(h);	/* while the threads exit */
	}
	while (__atomic_load_n(&exited, __ATOMIC_ACQUIRE) < rounds * threads)
		sched_yield();
	usleep(100 * 1000);	/* the library's destructors run after ours */
	arena_alloc__destroy(skel);
	if (failed) {
		fprintf(stderr, "uc_destroy: an allocation or free failed\n");
		return 1;
	}
	printf("uc_destroy: %d rounds of %d threads exiting during aa_heap__destroy(): no error\n",
	       rounds, threads);
	return 0;
}
