// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tracelist.c - loads tracelist.bpf.c (linked with arena-alloc), lets it
 * record context switches for a moment, then walks the list it built in
 * the arena straight from the mmap, prints the newest events and frees the
 * list with tracelist_clear. Exits 0 only if the walk found every event
 * the program kept and the clear freed all of them.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "arena_alloc.h"
#include "aa_shared.h"	/* before the skeleton: the library's globals it shows */
#include "tracelist.h"
#include "tracelist.skel.h"

#define LIMIT	200

int main(void)
{
	AA_OPTS(aa_heap_opts, opts, .init_bytes = 1 << 20);
	LIBBPF_OPTS(bpf_test_run_opts, run);
	__u64 a, walked = 0, kept;
	struct tracelist *skel;
	struct aa_heap *heap = NULL;
	struct aa_stats st;
	int i, err = 1;

	skel = tracelist__open();
	if (!skel)
		return 1;
	skel->rodata->limit = LIMIT;
	if (tracelist__load(skel)) {
		fprintf(stderr, "tracelist: load failed: %s\n", strerror(errno));
		goto out;
	}
	heap = aa_heap__attach(skel->obj, &opts);	/* before any event */
	if (!heap || tracelist__attach(skel)) {
		fprintf(stderr, "tracelist: heap or attach failed: %s\n", strerror(errno));
		goto out;
	}
	for (i = 0; i < 100 && skel->bss->taken < LIMIT; i++)
		usleep(2000);	/* each sleep is two switches at least */
	tracelist__detach(skel);

	printf("%-18s %8s %8s  %s\n", "ts (ns)", "prev", "next", "next comm");
	for (a = skel->bss->head; a; walked++) {
		const struct event *e = aa_heap__ptr(heap, a);
		char comm[17] = {};

		if (!e || walked > LIMIT)
			break;
		if (walked < 5) {
			memcpy(comm, e->comm, 16);
			printf("%-18llu %8u %8u  %s\n", (unsigned long long)e->ts, e->prev_pid,
			       e->next_pid, comm);
		}
		a = e->next;
	}
	kept = (skel->bss->taken < LIMIT ? skel->bss->taken : LIMIT) - skel->bss->dropped;
	printf("events: %llu walked, %llu kept, %llu dropped\n", (unsigned long long)walked,
	       (unsigned long long)kept, (unsigned long long)skel->bss->dropped);
	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.tracelist_clear), &run))
		goto out;
	aa_heap__stats(heap, &st);	/* live_allocs: the program's, caches apart */
	printf("freed %llu; allocations left %llu\n", (unsigned long long)skel->bss->freed,
	       (unsigned long long)st.live_allocs);
	if (walked && walked == kept && skel->bss->freed == kept && st.live_allocs == 0) {
		printf("tracelist: OK\n");
		err = 0;
	} else {
		fprintf(stderr, "tracelist: FAILED: the list is not what the program kept\n");
	}
out:
	aa_heap__destroy(heap);
	tracelist__destroy(skel);
	return err;
}
