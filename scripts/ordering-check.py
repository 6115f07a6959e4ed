#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""ordering-check.py - are the userspace hit path's ordering primitives what
the claim protocol needs on a weakly ordered CPU (arm64)?

Reads aarch64 assembly (`aarch64-linux-gnu-gcc -O2 -S -DAA_ORDERING_CHECK`),
in which include/aa_hit.h keeps each ordering primitive out of line under
its own name (__aa_ordering), and checks:

  release  __aa_store_release: a store-release. One of stlr*, stlxr*/stlxp,
           an LSE read-modify-write with release semantics (swpl, swpal,
           casl, casal, ldaddl, ...), a store after `dmb ish`, or a call of
           a libgcc outline atomic (-moutline-atomics, GCC's default on
           aarch64) whose memory model releases: _rel, _acq_rel, and _sync
           for all but swp. libgcc's lse.S: _sync swp is swpa with LSE and
           ldxr/stxr + `dmb ish` without, an acquire only in both (the
           barrier comes after the store); the other _sync functions are
           casal/ldaddal.. or ld[a]xr/stlxr + `dmb ish`.
  acquire  __aa_cache_claim, __aa_cmpxchg64: an acquire. ldar*, ldaxr*,
           ldapr*, an LSE read-modify-write with acquire semantics (casa,
           casal, swpa, ...), `dmb ish`/`dmb ishld` after the access, or an
           outline atomic of model _acq, _acq_rel or _sync.
  calls    each --calls FUNC:PRIM names a function of the file that must
           call PRIM: the hit path reaches the checked primitive, not a
           copy of its own.

usage: ordering-check.py FILE.s [--calls FUNC:PRIM ...] [FILE.s ...]
Exit 0 when every check passes, 1 otherwise (each failure on stderr).
"""
import re
import sys

RELEASE = ["__aa_store_release"]
ACQUIRE = ["__aa_cache_claim", "__aa_cmpxchg64"]

LSE_OPS = r"(?:swp|casp?|ldadd|ldclr|ldeor|ldset|ldsmax|ldsmin|ldumax|ldumin)"
OUTLINE = re.compile(r"__aarch64_(swp|cas|ldadd|ldclr|ldeor|ldset)(\d+)_(relax|acq_rel|acq|rel|sync)$")
STORE = re.compile(r"^(str|strb|strh|stur|sturb|sturh|stp)$")


def functions(path):
    """{name: [(mnemonic, operands), ...]} of the functions in path."""
    funcs, cur = {}, None
    for line in open(path):
        line = line.split("//")[0].rstrip()
        m = re.match(r"^([A-Za-z_.$][\w.$]*):", line)
        if m and not m.group(1).startswith(".L"):
            cur = m.group(1)
            funcs[cur] = []
            continue
        if cur is None:
            continue
        if re.match(r"^\s*\.size\s+" + re.escape(cur) + r",", line):
            cur = None
            continue
        m = re.match(r"^\s+([a-z][\w.]*)\s*(.*)$", line)
        if m and not m.group(1).startswith("."):
            funcs[cur].append((m.group(1), m.group(2)))
    return funcs


def outline_model(ops):
    m = OUTLINE.match(ops.strip())
    return (m.group(1), m.group(3)) if m else None


def is_release(body):
    """The instruction of body that makes it a release, or None."""
    fenced = False
    for mn, ops in body:
        if re.match(r"^(stlr[bh]?|stlur[bh]?|stlxr[bh]?|stlxp)$", mn):
            return mn
        if re.match(r"^" + LSE_OPS + r"a?l[bh]?$", mn):
            return mn
        if mn == "dmb" and ops.strip() in ("ish", "sy"):
            fenced = True
        if fenced and (STORE.match(mn) or re.match(r"^(stxr|stxp)", mn)):
            return "dmb ish; " + mn
        if mn == "bl":
            om = outline_model(ops)
            if om and (om[1] in ("rel", "acq_rel") or (om[1] == "sync" and om[0] != "swp")):
                return "bl " + ops.strip()
    return None


def is_acquire(body):
    """The instruction of body that makes it an acquire, or None."""
    accessed = False
    for mn, ops in body:
        if re.match(r"^(ldar[bh]?|ldapr[bh]?|ldapur[bh]?|ldaxr[bh]?|ldaxp)$", mn):
            return mn
        if re.match(r"^" + LSE_OPS + r"al?[bh]?$", mn) and re.match(r"^" + LSE_OPS + r"a", mn):
            return mn
        if re.match(r"^(ldxr|ldxp|ldr|ldur)", mn):
            accessed = True
        if accessed and mn == "dmb" and ops.strip() in ("ish", "ishld", "sy"):
            return "dmb " + ops.strip()
        if mn == "bl":
            om = outline_model(ops)
            if om and om[1] in ("acq", "acq_rel", "sync"):
                return "bl " + ops.strip()
    return None


def show(body):
    return "; ".join((mn + " " + ops).strip() for mn, ops in body)


def check(path, calls):
    funcs, bad = functions(path), 0
    for names, test, what in ((RELEASE, is_release, "a release"), (ACQUIRE, is_acquire, "an acquire")):
        for name in names:
            if name not in funcs:
                continue
            how = test(funcs[name])
            if how:
                print("ordering-check: %s: %s is %s (%s)" % (path, name, what, how))
            else:
                print("ordering-check: %s: %s is not %s: %s" % (path, name, what, show(funcs[name])),
                      file=sys.stderr)
                bad += 1
    for fn, prim in calls:
        if prim not in funcs:
            print("ordering-check: %s: %s is not out of line (built without -DAA_ORDERING_CHECK?)"
                  % (path, prim), file=sys.stderr)
            bad += 1
        elif fn not in funcs:
            print("ordering-check: %s: no function %s" % (path, fn), file=sys.stderr)
            bad += 1
        elif not any(mn in ("bl", "b") and ops.strip() == prim for mn, ops in funcs[fn]):
            print("ordering-check: %s: %s does not call %s" % (path, fn, prim), file=sys.stderr)
            bad += 1
    return bad


def main(argv):
    files, cur = [], None
    i = 1
    while i < len(argv):
        if argv[i] == "--calls" and cur is not None and i + 1 < len(argv):
            fn, _, prim = argv[i + 1].partition(":")
            cur[1].append((fn, prim))
            i += 2
            continue
        if argv[i].startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        cur = (argv[i], [])
        files.append(cur)
        i += 1
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    bad = sum(check(path, calls) for path, calls in files)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
