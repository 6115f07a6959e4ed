#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""ordering-check-bpf.py - are the BPF hit path's ordering primitives what
the claim protocol needs, as BPF instructions, for one target architecture?

Reads `llvm-objdump --mcpu=v3 -d` of tests/ordering/hit_path.bpf.c built
with -D__TARGET_ARCH_<arch>. BPF before Linux 6.15 has no store-release or
load-acquire; its atomic read-modify-writes with a fetch (xchg, cmpxchg)
are fully ordered on every JIT. So:

  weak (arm64 and all but x86)
    aa_oc_cache_release   an atomic exchange (xchg), no plain store: the
                          release of the cache's claim
    aa_oc_hit_free,       a cmpxchg (the claim, an acquire) and an xchg
    aa_oc_hit_alloc       (the release)
  tso (x86)
    aa_oc_cache_release   a plain store and no atomic: TSO orders a store
                          after earlier ones, a full barrier would only cost
    aa_oc_hit_free,       a cmpxchg (the claim) and no xchg
    aa_oc_hit_alloc

usage: ordering-check-bpf.py weak|tso FILE.txt
Exit 0 when every check passes, 1 otherwise (each failure on stderr).
"""
import re
import sys

STORE = re.compile(r"^\*\(u(8|16|32|64) \*\)\(r\d+ [+-] 0x[0-9a-f]+\) = [rw]\d+$")


def functions(path):
    """{name: [instruction text, ...]} of the functions of an objdump."""
    funcs, cur = {}, None
    for line in open(path):
        m = re.match(r"^[0-9a-f]+ <([\w.]+)>:$", line.strip())
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        parts = line.rstrip("\n").split("\t")
        if cur is not None and len(parts) >= 2 and parts[0].strip().endswith(":"):
            cur.append(parts[-1].strip())
    return funcs


def kinds(body):
    """The ordering-relevant instructions of body: xchg, cmpxchg, store."""
    out = []
    for insn in body:
        if "cmpxchg" in insn:
            out.append("cmpxchg")
        elif "xchg" in insn:
            out.append("xchg")
        elif STORE.match(insn):
            out.append("store")
    return out


RULES = {
    "weak": {"aa_oc_cache_release": (["xchg"], ["store"]),
             "aa_oc_hit_free": (["cmpxchg", "xchg"], []),
             "aa_oc_hit_alloc": (["cmpxchg", "xchg"], [])},
    "tso": {"aa_oc_cache_release": (["store"], ["xchg", "cmpxchg"]),
            "aa_oc_hit_free": (["cmpxchg"], ["xchg"]),
            "aa_oc_hit_alloc": (["cmpxchg"], ["xchg"])},
}


def main(argv):
    if len(argv) != 3 or argv[1] not in RULES:
        print(__doc__, file=sys.stderr)
        return 2
    model, path = argv[1], argv[2]
    funcs, bad = functions(path), 0
    for name, (need, refuse) in RULES[model].items():
        if name not in funcs:
            print("ordering-check-bpf: %s: no function %s" % (path, name), file=sys.stderr)
            bad += 1
            continue
        k = kinds(funcs[name])
        missing = [x for x in need if x not in k]
        extra = [x for x in refuse if x in k]
        if missing or extra:
            print("ordering-check-bpf: %s (%s): %s%s%s: %s" % (
                path, model, name, " lacks " + ", ".join(missing) if missing else "",
                " has " + ", ".join(extra) if extra else "", "; ".join(funcs[name])),
                file=sys.stderr)
            bad += 1
        else:
            print("ordering-check-bpf: %s (%s): %s: %s" % (path, model, name, ", ".join(k)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
