#!/usr/bin/env bash
# Checks the C/C++/CUDA sources against .clang-format and .clang-tidy (docs/style.md).
#   bash tools/check_style.sh              the format check of every source, then clang-tidy
#                                          on the files changed since the merge-base with origin/main
#   bash tools/check_style.sh --format     the format check only (ctest's style.format runs this)
#   bash tools/check_style.sh --tidy       clang-tidy only (on changed files; add --all for all)
#   bash tools/check_style.sh --all        clang-tidy on every translation unit, not just changed ones
#   bash tools/check_style.sh --fix        reformat every source in place, check nothing
# Options:
#   --base REF   "changed" means changed since the merge-base of HEAD and REF (default: origin/main,
#                else main), plus uncommitted and untracked changes
#   -p DIR       the build directory whose compile_commands.json clang-tidy uses (default: build)
#   -j N         parallel jobs (default: nproc)
# CLANG_FORMAT and CLANG_TIDY name the binaries (default clang-format-14 and clang-tidy-14; another
# major version formats differently, so a plain clang-format is taken only if it is version 14).
# Exit: 0 clean, or a tool is missing (then it prints "check_style: SKIPPED" and why); 1 problems
# found; 2 bad usage, or no compile_commands.json.
set -euo pipefail
cd "$(dirname "$0")/.."

do_format=1 do_tidy=1 tidy_all=0 fix=0 base="" build=build
jobs=$(nproc 2>/dev/null || echo 2)
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --format) do_format=1 do_tidy=0 ;;
    --tidy) do_format=0 do_tidy=1 ;;
    --all) tidy_all=1 ;;
    --fix) fix=1 ;;
    --base) [ $# -ge 2 ] || usage; base=$2; shift ;;
    -p) [ $# -ge 2 ] || usage; build=$2; shift ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
    -h|--help) usage ;;
    *) echo "check_style: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done

# Weft's sources live in these folders (build trees never do).
source_dirs=(src transports collectives include tests benchmarks tools)
source_exts='c|cc|cpp|h|hpp|cu|cuh'

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-style.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Prints the path of a clang tool of major version 14: the override $1 if set, else the versioned
# name $2, else the plain name when that is version 14.
find_tool() {
  local override=$1 name=$2 plain=${2%-14}
  if [ -n "$override" ]; then command -v "$override"; return; fi
  command -v "$name" && return 0
  command -v "$plain" >/dev/null && "$plain" --version | grep -q 'version 14\.' && command -v "$plain"
}

skip() { echo "check_style: SKIPPED $1: $2 not found (tools/setup-debian.sh installs it)"; }

# Every C/C++/CUDA source git knows of, tracked or new but not ignored (outside a git checkout:
# every one on disk).
list_sources() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- "${source_dirs[@]}"
  else
    find "${source_dirs[@]}" -type f
  fi | grep -E "\.($source_exts)$" | sort -u | while read -r f; do [ ! -f "$f" ] || echo "$f"; done
}

# clang-format 14 splits the ">>>" that closes a CUDA/HIP kernel launch into "> > >" when the
# launch sits in a preprocessor branch after the first; nvcc and hipcc then reject the file.
# Formatted C++ has no "> > >" otherwise, so any occurrence is such a launch.
check_launches() {
  if xargs -r grep -nE '> > >[[:space:]]*\(' <"$tmp/sources" >"$tmp/launches"; then
    cat "$tmp/launches"
    echo "check_style: FAILED: clang-format split the '>>>' of the kernel launch(es) above: restore it and"
    echo "put '// clang-format off' and '// clang-format on' around the launch, as step_kernel.cu does."
    return 1
  fi
}

if [ "$fix" = 1 ]; then
  clang_format=$(find_tool "${CLANG_FORMAT:-}" clang-format-14) || {
    echo "check_style: --fix needs clang-format 14 (set CLANG_FORMAT, or run tools/setup-debian.sh)" >&2
    exit 2
  }
  list_sources >"$tmp/sources"
  xargs -r -P "$jobs" -n 16 "$clang_format" -i --style=file <"$tmp/sources"
  echo "check_style: formatted $(grep -c . "$tmp/sources") files with $("$clang_format" --version)"
  check_launches || exit 1
  exit 0
fi

status=0

if [ "$do_format" = 1 ]; then
  if clang_format=$(find_tool "${CLANG_FORMAT:-}" clang-format-14); then
    list_sources >"$tmp/sources"
    if xargs -r -P "$jobs" -n 16 "$clang_format" --dry-run --Werror --style=file <"$tmp/sources" \
        >"$tmp/format.log" 2>&1; then
      echo "check_style: format ok ($(grep -c . "$tmp/sources") files, $("$clang_format" --version))"
    else
      grep -oE '^[^: ]+:[0-9]+:[0-9]+: error: code should be clang-formatted' "$tmp/format.log" | cut -d: -f1 |
        sort -u >"$tmp/unformatted" || true
      if [ ! -s "$tmp/unformatted" ]; then  # clang-format itself failed (a bad .clang-format, say)
        cat "$tmp/format.log"
        echo "check_style: FAILED: clang-format could not check the sources (above)"
        exit 2
      fi
      # What the formatter would change, for the first few files (the whole list follows).
      while read -r f; do
        "$clang_format" --style=file "$f" | diff -u --label "$f" --label "$f (formatted)" "$f" - || true
      done < <(head -n 5 "$tmp/unformatted") | head -n 200
      echo
      echo "check_style: FAILED: $(grep -c . "$tmp/unformatted") file(s) are not formatted as .clang-format says:"
      sed 's/^/  /' "$tmp/unformatted"
      echo "Run 'bash tools/check_style.sh --fix' (clang-format 14) and commit the result."
      status=1
    fi
    check_launches || status=1
  else
    skip "the format check" clang-format-14
  fi
fi

if [ "$do_tidy" = 1 ]; then
  if ! clang_tidy=$(find_tool "${CLANG_TIDY:-}" clang-tidy-14); then
    skip clang-tidy clang-tidy-14
    exit "$status"
  fi
  db="$build/compile_commands.json"
  if [ ! -f "$db" ]; then
    echo "check_style: no $db: configure a build there first (cmake -S . -B $build; docs/style.md)" >&2
    exit 2
  fi
  if [ "$tidy_all" = 1 ]; then
    scope="every translation unit in $db"
    picked=(--all)
  else
    if [ -z "$base" ]; then
      for ref in origin/main main; do
        if git rev-parse --verify -q "$ref^{commit}" >/dev/null; then base=$ref; break; fi
      done
      if [ -z "$base" ]; then
        echo "check_style: no origin/main or main to compare with: pass --base REF, or --all" >&2
        exit 2
      fi
    fi
    mb=$(git merge-base HEAD "$base") || { echo "check_style: HEAD and $base have no merge-base" >&2; exit 2; }
    scope="the files changed since $(git rev-parse --short "$mb") (merge-base with $base)"
    # Committed since the merge-base, staged, unstaged and untracked; deleted files drop out.
    { git diff --name-only --diff-filter=d "$mb" -- "${source_dirs[@]}"
      git ls-files --others --exclude-standard -- "${source_dirs[@]}"; } |
      grep -E "\.($source_exts)$" | sort -u >"$tmp/changed" || true
    mapfile -t picked <"$tmp/changed"
    if [ ${#picked[@]} = 0 ]; then
      echo "check_style: clang-tidy: no C/C++ file changed since $(git rev-parse --short "$mb") ($base)"
      exit "$status"
    fi
  fi
  mkdir "$tmp/tidy" "$tmp/tidy/reports"
  python3 tools/tidy_files.py "$db" "$tmp/tidy" "${picked[@]}"
  n=$(grep -c . "$tmp/tidy/files" || true)
  if [ "$n" = 0 ]; then
    echo "check_style: clang-tidy: nothing to check ($scope)"
    exit "$status"
  fi
  echo "check_style: clang-tidy ($("$clang_tidy" --version | grep -o 'version [0-9.]*')) on $n file(s): $scope"
  start=$(date +%s)
  # One report per file, so that parallel runs do not interleave; a file whose run fails (a
  # finding: warnings are errors here, or a compile error) leaves a .failed marker.
  export clang_tidy tmp
  # shellcheck disable=SC2016
  xargs -r -P "$jobs" -I{} bash -c '
    r="$tmp/tidy/reports/$(printf "%s" "$1" | tr / _)"
    "$clang_tidy" -p "$tmp/tidy" --quiet --warnings-as-errors="*" "$1" >"$r" 2>&1 || touch "$r.failed"' _ {} \
    <"$tmp/tidy/files"
  # The findings, without clang-tidy's counts, and with a build-tree copy named as its original.
  sed_args=()
  while IFS=$'\t' read -r copy orig; do sed_args+=(-e "s|$copy|$orig|g"); done <"$tmp/tidy/aliases"
  sed_args+=(-e "s|^$PWD/||")  # paths relative to the repository root
  failed=0
  for r in "$tmp"/tidy/reports/*; do
    case "$r" in *.failed) failed=$((failed + 1)); continue ;; esac
    grep -vE '^[0-9]+ (warning|error)s? (and [0-9]+ (warning|error)s? )?(generated|treated as errors)\.$|^Suppressed [0-9]+ warnings|^Use -header-filter=|^Error while processing ' "$r" |
      sed -e "" "${sed_args[@]}" || true
  done
  echo "check_style: clang-tidy took $(($(date +%s) - start)) s with $jobs job(s)"
  if [ "$failed" -gt 0 ]; then
    echo
    echo "check_style: FAILED: clang-tidy found problems while checking $failed of $n file(s) (above)."
    echo "Fix them; docs/style.md lists the checks and says when a NOLINT(check-name) with a reason is right."
    status=1
  else
    echo "check_style: clang-tidy ok"
  fi
fi
exit "$status"
