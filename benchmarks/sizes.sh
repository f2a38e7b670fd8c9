# shellcheck shell=bash
# Sourced by the comparison scripts: sizes as users write them on the command line.

# bytes_of 64K -> 65536: a decimal count, or one with a K or M suffix (2^10, 2^20).
bytes_of() {
  case "$1" in
    *[kK]) echo $(( ${1%?} * 1024 )) ;;
    *[mM]) echo $(( ${1%?} * 1048576 )) ;;
    *) echo $(( $1 )) ;;
  esac
}
