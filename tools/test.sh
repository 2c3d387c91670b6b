#!/usr/bin/env bash
# Builds sluice and runs every test: the full suites, then the core and io
# suites under AddressSanitizer + UndefinedBehaviorSanitizer, then an install
# of the package used by an out-of-tree example.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash tools/build.sh
echo "== unit tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== core and io suites under ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSLUICE_SANITIZE="address;undefined" -DSLUICE_TEST_MODULES="core;io" \
  -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_BENCH=OFF -DSLUICE_CUDA=OFF >/dev/null
cmake --build build-asan --parallel "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== install and build the out-of-tree example"
rm -rf build/install build/example-consumer
cmake --install build --prefix build/install >/dev/null
cmake -S examples/consumer -B build/example-consumer -G Ninja \
  -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/example-consumer
./build/example-consumer/read_records tests/data/small100.tfrecord
echo "1 passed, 0 failed: out-of-tree find_package(sluice) example"
