#!/usr/bin/env bash
# Installs what building and testing Weft needs on Debian 12 (run as root). Safe to run again.
set -euo pipefail
pkgs=(cmake make g++ pkg-config libgtest-dev libgmock-dev libhwloc-dev python3 iproute2 procps)
missing=()
for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
