#!/usr/bin/env bash
# Builds sluice and runs every test: the full suites, and the C++ examples of README.md and docs/
# (doc_snippets, docs/CMakeLists.txt); the API reference (tools/doxygen.sh, failing on a warning);
# every suite again under AddressSanitizer + UndefinedBehaviorSanitizer; each libFuzzer target for
# 15 s; the dataset, autotune and train suites (their threaded parts) under ThreadSanitizer; then an
# install of the package whose installed examples are built out of tree. Both sanitizer builds
# use clang, whose -Wthread-safety -Werror=thread-safety (CMakeLists.txt) checks the lock
# annotations of the whole library.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
start=$SECONDS
took() { printf '== %s: %dm%02ds\n' "$1" $(((SECONDS - $2) / 60)) $(((SECONDS - $2) % 60)); }

t=$SECONDS
bash tools/build.sh
took "build" "$t"
echo "== unit tests"
t=$SECONDS
ctest --test-dir build --output-on-failure -j "$jobs"
took "unit tests" "$t"

echo "== API reference (Doxygen, no warnings allowed)"
t=$SECONDS
bash tools/doxygen.sh
took "Doxygen" "$t"

echo "== every suite under ASan + UBSan (clang, thread-safety analysis on)"
t=$SECONDS
# The same build compiles the libFuzzer targets (tests/fuzz/), run below.
bash tools/sanitizer_build.sh build-asan "address;undefined" \
  "core;io;dataset;ops;autotune;profiler;train;tools" -DSLUICE_FUZZ=ON \
  -DSLUICE_TEST_FILTER=-TrainCommandTest.CnnOnAFiveThousandImageSubsetReachesEightyPercent -- \
  fuzzers sluice_cli core_tests io_tests dataset_tests ops_tests autotune_tests profiler_tests \
  train_tests tools_tests
# One test runs in the Release suite only: the CLI's cnn training to an accuracy goal (13 s in
# Release, about 55 s here), whose code paths the shorter CLI training tests cover under ASan.
ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
  UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
took "ASan + UBSan" "$t"

echo "== every fuzz target for 15 s on its committed corpus (tests/fuzz/, tools/fuzz.sh)"
t=$SECONDS
bash tools/fuzz.sh --ci 15
took "fuzzing" "$t"

echo "== dataset, autotune, profiler and train suites under TSan (clang)"
t=$SECONDS
# The train suite's files that exercise threads: the trainer and its input (fit, data, recipes,
# callbacks), the traced steps, and the kernels' parallel loops and allocator (backend). The
# single-threaded ones (layers, ops, losses, ...) run under ASan and in Release; left out here,
# they save a quarter of this stage. Every test runs here: the empty SLUICE_TEST_FILTER clears
# one that an earlier configure of build-tsan left in its cache.
bash tools/sanitizer_build.sh build-tsan thread "dataset;autotune;profiler;train" \
  -DSLUICE_TEST_EXCLUDE='/tests/train/(layers|losses|metrics|ops|optimizers|export|import|models)/' \
  -DSLUICE_TEST_FILTER= -- dataset_tests autotune_tests profiler_tests train_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs"
took "TSan" "$t"

echo "== install and build the out-of-tree example"
t=$SECONDS
rm -rf build/install build/example-consumer
cmake --install build --prefix build/install >/dev/null
# The examples as the package installs them (share/doc/sluice/examples), not the source tree's.
cmake -S build/install/share/doc/sluice/examples/consumer -B build/example-consumer -G Ninja \
  -DCMAKE_PREFIX_PATH="$PWD/build/install" >/dev/null
cmake --build build/example-consumer
./build/example-consumer/read_records tests/data/small100.tfrecord
# The C++ training example, briefly: 2,000 training images, one epoch, the whole test set.
./build/sluice convert fashion-mnist --out build/example-data --shards 2 >/dev/null
(cd build && ./example-consumer/train_fashion_mnist example-data 1 2000)
# The Keras-workflow examples (docs/training.md, docs/custom-training.md): a few seconds each on
# random data.
./build/example-consumer/keras_models
./build/example-consumer/custom_training
# The seeds' section 4.1 on two small synthetic folder trees of JPEGs.
./build/example-consumer/image_folders
# The transfer-learning flow from an ONNX base (a small one written by ONNX's own helper; the
# README's torchvision ResNet-18 is a documented command, docs/training.md).
/usr/bin/python3 tests/onnx/make_models.py small_base build/example-base.onnx
./build/example-consumer/transfer_learning build/example-base.onnx
took "example" "$t"
took "tools/test.sh" "$start"
echo "6 passed, 0 failed: out-of-tree find_package(sluice) examples"
