#!/usr/bin/env bash
# Configures and builds sluice into build/ (Release). Extra arguments go to cmake, after ours.
# The library, the command line and the test suites build as unity sources of 16 files each (the
# CUDA plugin never does: its files share helper names), a third to a quarter of their compile
# time from scratch; -DCMAKE_UNITY_BUILD=OFF for file-by-file incremental builds while editing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 "$@" >/dev/null
cmake --build build --parallel "$(nproc)"
