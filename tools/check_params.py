#!/usr/bin/env python3
"""Checks that every parameter in src/base/param_table.h is read somewhere in the library.

A row of the table becomes an accessor (scope Rank: param::name()) or a field of param::Agreed
(scope Agreed: comm->agreed.name). A row that nothing reads documents a knob that does nothing, so
it fails here: give it a reader or remove it (docs/architecture.md, "Adding a parameter").

  python3 tools/check_params.py [--root DIR]
"""
import argparse
import os
import re
import sys

ROW = re.compile(r'X\((\w+),\s*\w+,\s*"(\w+)",\s*"[^"]*",\s*"[^"]*",\s*"[^"]*",\s*\w+,\s*(Agreed|Rank)\b')
READERS = ("src", "transports", "collectives", "tools")
# The table's own expansion, not readers.
SKIP = {os.path.join("src", "base", n) for n in ("param_table.h", "params.h", "params.cc")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    root = os.path.abspath(ap.parse_args().root)
    table = open(os.path.join(root, "src", "base", "param_table.h"), encoding="utf-8").read()
    rows = ROW.findall(table)
    if len(rows) < 20:
        print(f"check_params: found only {len(rows)} rows in param_table.h; has the row format changed?",
              file=sys.stderr)
        return 2
    text = []
    for top in READERS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if name.endswith((".h", ".cc", ".cu")) and rel not in SKIP:
                    text.append(open(os.path.join(root, rel), encoding="utf-8", errors="replace").read())
    text = "\n".join(text)
    unread = []
    for acc, name, scope in rows:
        pattern = rf"param::{acc}\s*\(" if scope == "Rank" else rf"\.{acc}\b"
        if not re.search(pattern, text):
            unread.append(f"{name} ({scope.lower()}: nothing reads " +
                          (f"param::{acc}()" if scope == "Rank" else f"agreed.{acc}") + ")")
    for u in unread:
        print("check_params: " + u, file=sys.stderr)
    if unread:
        return 1
    print(f"check_params: all {len(rows)} parameters have a reader")
    return 0


if __name__ == "__main__":
    sys.exit(main())
