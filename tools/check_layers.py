#!/usr/bin/env python3
"""Checks every #include of the library against the layer table in docs/architecture.md.

The table is the one place the layering is written down: each row names a folder and the folders
it may include. A file may include its own folder, the folders its row allows, and the public
headers (include/). Anything else fails, and so does a table whose rows form a cycle, so a newcomer
can trust the table and CI catches a forbidden include the day it is written.

  python3 tools/check_layers.py [--root DIR] [--graph]
"""
import argparse
import os
import re
import sys

SOURCE_ROOTS = ("src", "transports", "collectives")
SOURCE_EXT = (".h", ".cc", ".cu")
# Headers a build provides rather than a folder of the tree: the public API under include/ and the
# file CMake generates (weft/build_config.h).
PUBLIC = ("nccl.h", "rccl.h", "rccl/", "weft/")
# Bare names a build supplies from outside the library: the kernel-emulation test compiles the
# step kernel with its own kernel_emulation.h (tests/kernel_emulation).
SUPPLIED = {"kernel_emulation.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ROW = re.compile(r"^\|\s*\d+\s*\|\s*`([^`]+)/?`\s*\|(.*)\|(.*)\|\s*$")


def read_table(doc):
    """Returns {folder: set of folders it may include} from the layer table's rows."""
    allowed = {}
    for line in open(doc, encoding="utf-8"):
        m = ROW.match(line)
        if not m:
            continue
        folder = m.group(1).rstrip("/")
        may = set(re.findall(r"`([^`]+)`", m.group(3)))
        allowed[folder] = {f.rstrip("/") for f in may}
    return allowed


def folder_of(path, folders):
    """The table folder a source path belongs to (the longest match), or None."""
    best = None
    for f in folders:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def find_cycle(graph):
    """A list of folders forming a cycle in graph, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def include_target(inc, here, root, folders):
    """The folder an include names: resolved from the include roots (src/ and the tree's root)."""
    for base in ("src", ""):
        path = os.path.normpath(os.path.join(base, inc)) if base else os.path.normpath(inc)
        if os.path.exists(os.path.join(root, path)):
            return folder_of(path, folders), path
    local = os.path.normpath(os.path.join(os.path.dirname(here), inc))
    if os.path.exists(os.path.join(root, local)):
        return folder_of(local, folders), local
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--graph", action="store_true", help="print the folder graph the includes form")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    table = read_table(os.path.join(root, "docs", "architecture.md"))
    if len(table) < 5:
        print("check_layers: no layer table found in docs/architecture.md", file=sys.stderr)
        return 2
    problems = []
    cycle = find_cycle(table)
    if cycle:
        problems.append("the layer table itself has a cycle: " + " -> ".join(cycle))
    for folder, may in sorted(table.items()):
        for m in sorted(may - set(table)):
            problems.append(f"layer table: {folder} may include {m}, which is not a row of the table")

    used = {}
    for top in SOURCE_ROOTS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                mine = folder_of(rel, table)
                if mine is None:
                    problems.append(f"{rel}: its folder is not a row of the layer table")
                    continue
                for lineno, line in enumerate(open(os.path.join(root, rel), encoding="utf-8", errors="replace"), 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if inc.startswith(PUBLIC) or inc in SUPPLIED:
                        continue
                    target, path = include_target(inc, rel, root, table)
                    if path is None:
                        problems.append(f"{rel}:{lineno}: \"{inc}\" is no file of the tree")
                    elif target is None:
                        problems.append(f"{rel}:{lineno}: \"{inc}\" is in no folder of the layer table")
                    elif target != mine:
                        used.setdefault(mine, set()).add(target)
                        if target not in table[mine]:
                            problems.append(f"{rel}:{lineno}: {mine} may not include {target} (\"{inc}\"); "
                                            f"docs/architecture.md allows {mine} -> "
                                            + (", ".join(sorted(table[mine])) or "nothing"))
    if args.graph:
        for f in sorted(table):
            print(f"{f} -> {', '.join(sorted(used.get(f, ()))) or '-'}")
    cycle = find_cycle(used)
    if cycle:
        problems.append("the includes form a cycle between folders: " + " -> ".join(cycle))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); the layer table is in docs/architecture.md",
              file=sys.stderr)
        return 1
    print(f"check_layers: {len(table)} folders, every include follows the layer table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
