#!/usr/bin/env bash
# Configures and builds a clang sanitizer build: tools/sanitizer_build.sh DIR SANITIZERS MODULES
# [CMAKE_ARGS... --] TARGETS... (tools/test.sh's ASan + UBSan and TSan builds; tools/fuzz.sh's
# fuzzers, in the ASan build). -O1 with line tables: readable reports, a fraction of -O2 -g's
# build time. The library, the CLI and the suites build as unity sources of 16 files each
# (tests/CMakeLists.txt), which halves to quarters their compile time: these builds exist for CI.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1 sanitize=$2 modules=$3
shift 3
extra=()
if [[ " $* " == *" -- "* ]]; then
  while [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
fi
CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_C_FLAGS_SANITIZE="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" \
  -DSLUICE_SANITIZE="$sanitize" -DSLUICE_TEST_MODULES="$modules" \
  -DSLUICE_BUILD_BENCH=OFF -DSLUICE_CUDA=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
  "${extra[@]}" >/dev/null
cmake --build "$dir" --parallel "$(nproc)" --target "$@"
