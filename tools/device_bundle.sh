#!/usr/bin/env bash
# Prepares the GPU device check (issue 42) on this machine, so that a lent GPU's minutes go to
# running it, not to building:
#   tools/device_bundle.sh [--build DIR | --prebuilt DIR] [OUT_DIR]   (OUT_DIR: build-device/)
# 1. builds build/ (tools/build.sh: Release; the CUDA plugin for sm_80 and sm_90 when nvcc is
#    here), or the CUDA build already configured in DIR, and its targets sluice_cli,
#    sluice_cuda, gpu_tests and train_step_bench; with --prebuilt, takes those programs as DIR
#    holds them (sluice, libsluice_cuda.so, tests/gpu_tests, bench/train_step_bench: what .ci/run
#    copies out of the fresh root that built them) and builds nothing;
# 2. packs, with tools/pack_binaries.sh, the stripped programs (sluice, gpu_tests,
#    train_step_bench), libsluice_cuda.so and every non-system library they load (not glibc, not
#    the CUDA libraries, which the GPU machine's own are);
# 3. builds the Python module (issue 43) for the GPU machine's Python, 3.12 (PYTHON_FOR_DEVICE, or a
#    python3.12 found here with its headers; none found, or PYTHON_FOR_DEVICE=none as CI's
#    rehearsal sets it: the bundle has no module and the runner says so), in OUT_DIR/python-build
#    (about 3 minutes on 2 cores the first time), and packs it as python/sluice with the libraries
#    it loads;
# 4. adds the data: Fashion-MNIST's IDX files (half the training set, all of the test set), which
#    the runner converts with `sluice convert`, the photo fixture that `sluice bench`'s comparison
#    replicates, and the scripts the runner calls;
# 5. writes OUT_DIR/bundle.tar.gz and prints its size and the command for the device machine:
#      run: bash tools/device_check.sh build-device/bundle.tar.gz "$OUT"   carry: build-device
# The working tree (about 12 MiB) and the bundle travel together under the device tool's 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
build= prebuilt=0
case "${1:-}" in
  -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  --build) build=${2:?--build needs a directory}; shift 2 ;;
  --prebuilt) build=${2:?--prebuilt needs a directory}; prebuilt=1; shift 2 ;;
esac
out=$(mkdir -p "${1:-build-device}" && cd "${1:-build-device}" && pwd)
nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || { echo "device_bundle: no $nvcc here: the bundle needs a CUDA build" >&2; exit 1; }

echo "== device_bundle: build (Release, CUDA)"
if [ "$prebuilt" = 1 ]; then
  for f in sluice libsluice_cuda.so tests/gpu_tests bench/train_step_bench; do
    [ -f "$build/$f" ] || { echo "device_bundle: --prebuilt $build has no $f" >&2; exit 1; }
  done
else
  if [ -z "$build" ]; then
    bash tools/build.sh
    build=build
  fi
  cmake --build "$build" --parallel "$(nproc)" --target sluice_cli sluice_cuda gpu_tests train_step_bench
  [ -f "$build/libsluice_cuda.so" ] || { echo "device_bundle: $build made no libsluice_cuda.so" >&2; exit 1; }
fi

stage=$out/bundle
rm -rf "$stage" "$out/bundle.tar.gz"
mkdir -p "$stage/data" "$stage/scripts"
trap 'rm -rf "$stage"' EXIT
echo "== device_bundle: programs and libraries"
bash tools/pack_binaries.sh "$stage" "$build/sluice" "$build/tests/gpu_tests" \
  "$build/bench/train_step_bench" "$build/libsluice_cuda.so"

echo "== device_bundle: the Python module for the device's Python"
# The GPU machine's python3 is 3.12 (the device tool's KINDS.md); a module is built for one
# Python only. Its libraries are built again in a build folder of its own, configured for CUDA
# so that it loads the bundle's plugin (the same compiler: the same plugin ABI).
py_device=${PYTHON_FOR_DEVICE:-}
python_note="no Python 3.12 with headers here (set PYTHON_FOR_DEVICE): the bundle has no Python module"
if [ "$py_device" = none ]; then
  py_device=
  python_note="PYTHON_FOR_DEVICE=none: the bundle has no Python module"
elif [ -z "$py_device" ]; then
  for cand in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    if command -v "$cand" >/dev/null 2>&1 &&
      [ -f "$("$cand" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]; then
      py_device=$(command -v "$cand")
      break
    fi
  done
fi
if [ -n "$py_device" ]; then
  pybuild=$out/python-build
  if cmake -S . -B "$pybuild" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_CUDA=ON \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 -DSLUICE_BUILD_TESTS=OFF \
    -DSLUICE_BUILD_BENCH=OFF -DPython3_EXECUTABLE="$py_device" >"$out/python-build.log" 2>&1 &&
    cmake --build "$pybuild" --parallel "$(nproc)" --target sluice_python >>"$out/python-build.log" 2>&1; then
    module=$(ls "$pybuild"/python/sluice/_sluice*.so)
    bash tools/pack_binaries.sh "$stage" "$module"
    mkdir -p "$stage/python/sluice"
    mv "$stage/lib/$(basename "$module")" "$stage/python/sluice/"
    cp "$pybuild"/python/sluice/*.py "$stage/python/sluice/"
    python_note="$("$py_device" --version 2>&1) ($(basename "$module"))"
  else
    tail -20 "$out/python-build.log" >&2
    echo "device_bundle: the Python module did not build for $py_device ($out/python-build.log)" >&2
    exit 1
  fi
fi
echo "device_bundle: Python module: $python_note"

echo "== device_bundle: data"
# Fashion-MNIST's IDX files, cut to the first 30,000 training images (plenty to compare devices)
# and all 10,000 test images: 17 MB gzipped, where its JPEG shards would be 39 MB that do not
# compress. The runner converts them with `sluice convert` there (a second on 16 cores).
src=/usr/share/datasets/fashion-mnist
[ -f "$src/train-images-idx3-ubyte.gz" ] ||
  { echo "device_bundle: no Fashion-MNIST in $src (tools/setup.sh installs it)" >&2; exit 1; }
mkdir -p "$stage/data/fashion-mnist-idx"
python3 - "$src" "$stage/data/fashion-mnist-idx" <<'PY'
import gzip, struct, sys
src, dst = sys.argv[1:]
for split, keep in (("train", 30000), ("t10k", 10000)):
    for kind, header in (("images-idx3", 16), ("labels-idx1", 8)):
        data = gzip.open(f"{src}/{split}-{kind}-ubyte.gz").read()
        head = bytearray(data[:header])
        count = struct.unpack(">I", head[4:8])[0]
        item = (len(data) - header) // count
        struct.pack_into(">I", head, 4, keep)
        with gzip.open(f"{dst}/{split}-{kind}-ubyte.gz", "wb", compresslevel=9) as f:
            f.write(bytes(head) + data[header:header + keep * item])
PY
cp tests/data/images3.tfrecord "$stage/data/"

echo "== device_bundle: scripts"
cp tools/device_check.sh bench/pytorch_train_compare.py bench/pytorch_compare.py \
  tools/device/*.py "$stage/scripts/"
{
  echo "{\"commit\": \"$(git rev-parse HEAD)\", \"dirty\": $([ -z "$(git status --porcelain)" ] && echo false || echo true),"
  echo " \"built\": \"$(date -u +%FT%TZ)\", \"nvcc\": \"$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')\","
  # The plugin's targets as its nvcc lines name them (CMAKE_CUDA_ARCHITECTURES is not cached).
  echo " \"cuda_architectures\": \"$(grep -o -- '--generate-code=arch=compute_[0-9a-z]*,code=\[[^]]*\]' \
    "$build/build.ninja" 2>/dev/null | sed 's/.*code=\[\(.*\)\]/\1/' | sort -u | paste -sd, -)\","
  echo " \"python_module\": \"$python_note\","
  echo " \"build_cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')\"}"
} >"$stage/manifest.json"

tar -C "$out" -czf "$out/bundle.tar.gz" bundle
rm -rf "$stage"
mb=$(du -m "$out/bundle.tar.gz" | cut -f1)
tree_mb=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {printf "%d", s / 1048576 + 1}')
echo "device_bundle: $out/bundle.tar.gz: $mb MB (the tracked tree: $tree_mb MB; the device tool carries 64 MiB in all)"
[ $((mb + tree_mb)) -lt 62 ] || { echo "device_bundle: too large to carry" >&2; exit 1; }
echo "run on the device machine: bash tools/device_check.sh ${out#"$PWD"/}/bundle.tar.gz \"\$OUT\"   (carry: ${out#"$PWD"/})"
