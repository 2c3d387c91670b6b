#!/usr/bin/env bash
# Builds sluice and runs every test: the full suites, then the core, io and
# ops suites under AddressSanitizer + UndefinedBehaviorSanitizer, the dataset
# suites under ThreadSanitizer, then an install of the package used by an
# out-of-tree example.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash tools/build.sh
echo "== unit tests"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== core, io and ops suites under ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSLUICE_SANITIZE="address;undefined" -DSLUICE_TEST_MODULES="core;io;ops" \
  -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_BENCH=OFF -DSLUICE_CUDA=OFF >/dev/null
cmake --build build-asan --parallel "$jobs" --target core_tests io_tests ops_tests
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== dataset suites under ThreadSanitizer"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSLUICE_SANITIZE=thread -DSLUICE_TEST_MODULES=dataset \
  -DSLUICE_BUILD_TOOLS=OFF -DSLUICE_BUILD_BENCH=OFF -DSLUICE_CUDA=OFF >/dev/null
cmake --build build-tsan --parallel "$jobs" --target dataset_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs"

echo "== install and build the out-of-tree example"
rm -rf build/install build/example-consumer
cmake --install build --prefix build/install >/dev/null
cmake -S examples/consumer -B build/example-consumer -G Ninja \
  -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/example-consumer
./build/example-consumer/read_records tests/data/small100.tfrecord
# The C++ training example, briefly: 2,000 training images, one epoch, the whole test set.
./build/sluice convert fashion-mnist --out build/example-data --shards 2 >/dev/null
(cd build && ./example-consumer/train_fashion_mnist example-data 1 2000)
echo "2 passed, 0 failed: out-of-tree find_package(sluice) examples"
