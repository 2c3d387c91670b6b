#!/usr/bin/env bash
# The soak test (issue 46): `bash tools/soak.sh HOURS` builds sluice, converts Fashion-MNIST, and
# runs bench/soak.cc for HOURS in one process: pipelines using every Dataset op, each checkpointed
# at a random element and restored; training failed at a random step and resumed from its
# backups; the resident set and open file descriptors sampled after each cycle. It fails on any
# mismatch, on a resident set more than 5% above its plateau (the first hour, after a warm-up), or
# on more open descriptors than the plateau's. Not part of CI: a documented command.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h | --help | "")
    echo "Usage: tools/soak.sh HOURS   (see the comment at the top of this script)"
    exit 0
    ;;
esac
hours=$1
bash tools/build.sh
cmake --build build --target soak
data=build/soak-data
[ -f "$data/labels.txt" ] || build/sluice convert fashion-mnist --out "$data" --shards 4 >/dev/null
echo "== soak: $hours h; a line per cycle, a JSON summary at the end (also in build/soak.log)"
build/bench/soak "$hours" "$data" | tee build/soak.log
