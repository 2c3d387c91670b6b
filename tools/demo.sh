#!/usr/bin/env bash
# The main job, end to end: install what is missing, build, then run every
# stage that exists today on real data. Grows as the project does.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }

step "setup and build"
bash tools/build.sh

step "inspect TFRecord files written by an independent implementation"
./build/sluice inspect tests/data/small100.tfrecord tests/data/images3.tfrecord --records 2
./build/sluice inspect tests/data/small100.tfrecord.gz --records 1 --json

step "TFRecord read throughput (CRC verified) beside cat"
./build/bench/tfrecord_read_bench --benchmark_min_time=0.5 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true
