#!/usr/bin/env python3
"""Fails when the top-level modules of a crate import each other in a cycle.

ARCHITECTURE.md says modules import downwards, as crates do; this checks it. For each crate's
src/, an edge A -> B is a non-comment `crate::B` (or, in a top-level file, `super::B`) in a
file of module A outside its tests. Usage: scripts/module-cycles.py [CRATE_DIR ...]
"""
import os
import re
import sys

DEFAULT = ["storage", "query", "detect", "detectors", "server", "cli"]


def edges_of(crate):
    src = os.path.join(crate, "src")
    edges = {}
    for dirpath, _, files in os.walk(src):
        if "/tests" in dirpath[len(src):]:
            continue
        for name in files:
            if not name.endswith(".rs") or name == "tests.rs":
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), src)[:-3]
            top = rel.split("/")[0]
            if top in ("lib", "main"):
                continue
            text = open(os.path.join(dirpath, name), encoding="utf-8").read()
            text = text.split("#[cfg(test)]")[0]
            for line in text.splitlines():
                if line.strip().startswith("//"):
                    continue
                targets = re.findall(r"crate::([a-z_][a-z0-9_]*)", line)
                if "/" not in rel:
                    targets += re.findall(r"\bsuper::([a-z_][a-z0-9_]*)", line)
                for t in targets:
                    if t != top:
                        edges.setdefault(top, set()).add(t)
    return edges


def cycle_from(edges, start):
    """A path start -> ... -> start, or None."""
    stack = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


def main():
    crates = sys.argv[1:] or DEFAULT
    failed = False
    for crate in crates:
        edges = edges_of(crate)
        for module in sorted(edges):
            cycle = cycle_from(edges, module)
            if cycle:
                print(f"{crate}: modules import each other: {' -> '.join(cycle)}")
                failed = True
                break
    if failed:
        sys.exit(1)
    print(f"no import cycles between the top-level modules of {', '.join(crates)}")


if __name__ == "__main__":
    main()
