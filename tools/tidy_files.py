#!/usr/bin/env python3
"""Picks the translation units tools/check_style.sh runs clang-tidy on.

Usage: tidy_files.py COMPILE_COMMANDS_JSON OUT_DIR (--all | CHANGED_FILE...)

Writes OUT_DIR/compile_commands.json (one entry per source file: some tests compile a file into two
binaries, and tidy would check it twice), OUT_DIR/files (the sources to check, one a line) and
OUT_DIR/aliases (build-tree copy TAB the tracked file it stands for). Without --all the sources are
the changed ones plus, for a changed header, the sources that include it directly. Run it from the
repository root.
"""
import json
import os
import re
import subprocess
import sys

HEADER_EXTS = (".h", ".hpp", ".cuh")
# GCC code-generation flags of the build that clang-tidy's clang does not know and would reject
# (CMakeLists.txt: TLS descriptors). They change no diagnostic.
GCC_ONLY_FLAGS = ("-mtls-dialect=gnu2",)
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    db_path, out_dir, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    everything = args == ["--all"]
    root = os.getcwd()

    entries, seen = [], set()
    for e in json.load(open(db_path)):
        path = os.path.normpath(os.path.join(e["directory"], e["file"]))
        if path not in seen:
            seen.add(path)
            entries.append((path, e))

    # The build compiles some sources from copies in the build tree: the kernel emulation builds
    # src/device/gpu/step_kernel.cu as <build>/tests/kernel_emulation/step_kernel_emulated.cc (a
    # plain copy, same lines). Such a copy stands for its original in the file list and the reports.
    tracked_cu = subprocess.run(["git", "ls-files", "--", "*.cu"], capture_output=True, text=True).stdout.split()
    by_stem = {os.path.basename(f)[: -len(".cu")]: f for f in tracked_cu}
    alias = {}
    for path, _ in entries:
        m = re.fullmatch(r"(.+)_emulated\.cc", os.path.basename(path))
        if m and m.group(1) in by_stem:
            alias[path] = by_stem[m.group(1)]

    if not everything:
        sources = {alias.get(p, os.path.relpath(p, root)): p for p, _ in entries}
        wanted = set()
        for f in args:
            if not f.endswith(HEADER_EXTS):
                if f in sources:
                    wanted.add(sources[f])
                else:
                    print(f"check_style: not in the compilation database (GPU-only, or not built here): {f}")
                continue
            # The spellings an #include of this header may use: from the repository root, from
            # src/ (the library's include root), or its bare name from a file in its own folder.
            spellings = {f}
            if f.startswith("src/"):
                spellings.add(f[len("src/"):])
            base = os.path.basename(f)
            for rel, path in sources.items():
                try:
                    text = open(path, errors="replace").read()
                except OSError:
                    continue
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    if inc in spellings or (inc == base and os.path.dirname(rel) == os.path.dirname(f)):
                        wanted.add(path)
                        break
        entries = [(p, e) for p, e in entries if p in wanted]

    for _, e in entries:
        if "arguments" in e:
            e["arguments"] = [a for a in e["arguments"] if a not in GCC_ONLY_FLAGS]
        if "command" in e:
            e["command"] = " ".join(w for w in e["command"].split(" ") if w not in GCC_ONLY_FLAGS)
    with open(os.path.join(out_dir, "compile_commands.json"), "w") as out:
        json.dump([e for _, e in entries], out, indent=1)
    with open(os.path.join(out_dir, "files"), "w") as out:
        out.write("".join(p + "\n" for p, _ in entries))
    with open(os.path.join(out_dir, "aliases"), "w") as out:
        out.write("".join(f"{copy}\t{orig}\n" for copy, orig in alias.items()))


if __name__ == "__main__":
    main()
