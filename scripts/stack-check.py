#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""stack-check.py - how much of the 512-byte BPF stack the library's calls
take, read from the object itself.

The verifier adds up the stack of every frame on a call chain (each frame
rounded up to 16 bytes with the JIT) and refuses a program whose deepest
chain passes 512. A user's own frames on the way to a library call share
that budget, so docs/EMBEDDING.md promises them 512 minus the library's
deepest chain. This script finds, for each public function (aa_*, not
aa__*), its deepest chain through the library's frames, and fails when one
passes the limit the documentation states.

A frame's stack is its deepest r10 offset in `llvm-objdump -dr`; a call is
a BPF-to-BPF call (src_reg 1): through a relocation to a function symbol,
to a section symbol plus imm, or pc-relative inside the section.

usage: stack-check.py [--table] LIMIT OBJDUMP_DR_TXT SYMBOLS_TXT
  OBJDUMP_DR_TXT: `llvm-objdump -dr OBJ` (raw bytes shown)
  SYMBOLS_TXT:    `llvm-objdump -t OBJ`
  --table:        print each public function's chain, deepest first
Exit 1 when the deepest chain passes LIMIT bytes.
"""
import re
import sys

SYM = re.compile(r"^([0-9a-f]+)\s+\S+\s+F\s+(\S+)\s+[0-9a-f]+\s+(\S+)$")
FUNC = re.compile(r"^[0-9a-f]+ <([\w.]+)>:$")
SECTION = re.compile(r"^Disassembly of section (\S+):")
CALL = re.compile(r"^\s*(\d+):\s+85 (\S\S) .*\tcall (-?0x[0-9a-f]+)")
RELOC = re.compile(r"R_BPF_64_32\s+(\S+)")
STACK = re.compile(r"r10 - 0x([0-9a-f]+)")


def symbols(path):
    """{(section, instruction index): function name}"""
    syms = {}
    for line in open(path):
        m = SYM.match(line.strip())
        if m:
            syms[(m.group(2), int(m.group(1), 16) // 8)] = m.group(3)
    return syms


def frames(path, syms):
    """({function: deepest r10 offset}, {function: set of callees})"""
    depth, calls = {}, {}
    name = section = pending = None
    for line in open(path):
        line = line.rstrip("\n")
        m = SECTION.match(line)
        if m:
            section = m.group(1)
            continue
        m = FUNC.match(line.strip())
        if m:
            name = m.group(1)
            depth.setdefault(name, 0)
            calls.setdefault(name, set())
            continue
        if pending:
            idx, imm = pending
            pending = None
            m = RELOC.search(line)
            if m:
                target = m.group(1)
                if target.startswith("."):  # a section symbol: imm + 1
                    target = syms.get((target, imm + 1), "?")
                calls[name].add(target)
                continue
            calls[name].add(syms.get((section, idx + 1 + imm), "?"))
        if name is None:
            continue
        for off in STACK.findall(line):
            depth[name] = max(depth[name], int(off, 16))
        m = CALL.match(line)
        if m and m.group(2) == "10":  # src_reg 1: a BPF-to-BPF call
            pending = (int(m.group(1)), int(m.group(3), 16))
    return depth, calls


def chain(f, depth, calls, seen=()):
    """(bytes, [frames]) of the deepest chain from f."""
    best = (0, [])
    for c in calls.get(f, ()):
        if c in depth and c not in seen:
            sub = chain(c, depth, calls, seen + (f,))
            if sub[0] > best[0]:
                best = sub
    own = (depth[f] + 15) // 16 * 16
    return own + best[0], [f"{f} {own}"] + best[1]


def main():
    args = sys.argv[1:]
    table = args[:1] == ["--table"]
    args = args[1:] if table else args
    if len(args) != 3:
        sys.exit(__doc__)
    limit = int(args[0])
    depth, calls = frames(args[1], symbols(args[2]))
    lost = sorted(f for f in calls if "?" in calls[f])
    if lost:
        sys.exit(f"stack-check: a call with no function at its target in {', '.join(lost)}")
    public = [f for f in depth if f.startswith("aa_") and not f.startswith("aa__")]
    if not public:
        sys.exit("stack-check: no public function (aa_*) in the object")
    rows = sorted((chain(f, depth, calls) for f in public), key=lambda r: -r[0])
    for n, frames_ in rows if table else ():
        print(f"{n:4d}  {' > '.join(frames_)}")
    if rows[0][0] > limit:
        print(f"stack-check: {rows[0][1][0].split()[0]} takes {rows[0][0]} bytes of stack, "
              f"past the {limit} that docs/EMBEDDING.md promises (512 - {limit} for a "
              f"user's frames)", file=sys.stderr)
        sys.exit(1)
    print(f"stack-check: the deepest chain is {rows[0][0]} bytes (limit {limit})")


if __name__ == "__main__":
    main()
