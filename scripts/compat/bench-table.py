#!/usr/bin/env python3
"""The side-by-side table of `make compat-bench` from its guest log
(scripts/compat/bench-guest.sh): per subtest, the median over the rounds
of its BPF work's wall time (runner.c -t) on the peer's allocator and on
arena-alloc's compat front end, their ratio, and, where a subtest
allocates, arena-alloc's allocation calls (the heap lines of the untimed
counting run: allocations plus those that failed) and the calls per second on each side (the same
calls: the peers' tests are deterministic).

    scripts/compat/bench-table.py LOG
"""
import re
import statistics
import sys

TIME = re.compile(r'^(stock|aa): time:(\S+): (\d+) ns, (\d+) runs')
HEAP = re.compile(r'^aa: aa:(?:PASS|FAIL):(\S+) heap allocs (\d+) ')
NOMEM = re.compile(r'^aa: aa:----:(\S+)\s+nomem: (\d+)')
RESULT = re.compile(r'^(stock|aa): #\d+/\d+\s+(\S+):(\S+)')
ROUND = re.compile(r'^bench: (?:round (\d+)|counts) (stock|aa)')


def main(path):
    times = {}      # (mode, subtest) -> [ns]
    calls = {}      # subtest -> allocation calls (aa, first round)
    failed = set()
    head = ''
    last_allocs = {}    # test -> cumulative allocs of the live skeleton
    rnd = None
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('bench: Linux'):
                head = line[len('bench: '):]
            m = ROUND.match(line)
            if m:
                rnd = m.group(1) or 'counts'
                last_allocs = {}
                continue
            m = TIME.match(line)
            if m and rnd != 'counts':
                times.setdefault((m.group(1), m.group(2)), []).append(int(m.group(3)))
                continue
            m = HEAP.match(line)
            if m and rnd == 'counts':
                sub, n = m.group(1), int(m.group(2))
                test = sub.split('/')[0]
                # libarena's subtests share one skeleton: its counts add up
                prev = last_allocs.get(test, 0) if test == 'libarena' else 0
                calls[sub] = calls.get(sub, 0) + n - prev
                last_allocs[test] = n
                continue
            m = NOMEM.match(line)
            if m and rnd == 'counts':
                calls[m.group(1)] = calls.get(m.group(1), 0) + int(m.group(2))
                continue
            m = RESULT.match(line)
            if m and m.group(3) not in ('OK', 'DENIED'):
                failed.add((m.group(1), m.group(2)))
    subs = sorted({s for (_, s) in times}, key=lambda s: (s.split('/')[0], s))
    ratios = {}     # test -> [ratio of each subtest that allocates]
    print(f'Where: {head}; medians over the rounds.')
    print()
    print('| subtest | peer ms | arena-alloc ms | ratio | allocation calls | peer calls/s | arena-alloc calls/s |')
    print('|---|---:|---:|---:|---:|---:|---:|')
    for s in subs:
        st = times.get(('stock', s))
        aa = times.get(('aa', s))
        if not st or not aa:
            continue
        ms, ma = statistics.median(st) / 1e6, statistics.median(aa) / 1e6
        n = calls.get(s, 0)
        mark = ' (FAILED)' if ('stock', s) in failed or ('aa', s) in failed else ''
        ratio = f'{ma / ms:.2f}' if ms > 0 else '-'
        if n and ms > 0:
            ratios.setdefault(s.split('/')[0], []).append(ma / ms)
        if n:
            print(f'| {s}{mark} | {ms:.2f} | {ma:.2f} | {ratio} | {n} | '
                  f'{n / (ms / 1e3):,.0f} | {n / (ma / 1e3):,.0f} |')
        else:
            print(f'| {s}{mark} | {ms:.2f} | {ma:.2f} | {ratio} | - | - | - |')
    print()
    for test, r in sorted(ratios.items()):
        print(f'{test}: geometric mean of the ratio over its {len(r)} subtests that allocate: '
              f'{statistics.geometric_mean(r):.2f}')
    return 1 if failed else 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
