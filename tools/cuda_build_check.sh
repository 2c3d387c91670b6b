#!/usr/bin/env bash
# What a CUDA build must do on a machine without a GPU (issue 42; .ci/run runs it, as root, on the
# CUDA build that tools/test.sh made in its fresh root):
#   tools/cuda_build_check.sh BUILD_DIR
# BUILD_DIR holds a CUDA build's sluice, libsluice_cuda.so, tests/gpu_tests and
# bench/train_step_bench, built (nothing here builds them).
#  1. gpu_tests passes, its GPU tests skipped, saying so;
#  2. `sluice --help` stays under 40 MB resident: the CUDA libraries are not loaded for it;
#  3. here, where the CUDA libraries are, `sluice train --device cuda` loads the plugin (every
#     function it calls is found in sluice) and fails with "no CUDA device" (or trains, on a GPU);
#  4. in a fresh Debian root without CUDA or sluice's packages (tools/fresh_root.sh), sluice with
#     its libraries (tools/pack_binaries.sh) trains on the CPU, and `--device cuda` names the CUDA
#     library the plugin could not load;
#  5. the GPU device check's bundle (tools/device_bundle.sh) unpacks and runs in such a root
#     (tools/device_check.sh): the bundle's sluice trains, and every GPU part says "skipped: no
#     device".
# Takes about 2 minutes besides the build.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tools/cuda_build_check.sh BUILD_DIR}
sluice=$(readlink -f "$build/sluice")
[ -x "$sluice" ] && [ -f "$build/libsluice_cuda.so" ] ||
  { echo "cuda_build_check: $build has no sluice or libsluice_cuda.so (a CUDA build?)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "cuda_build_check: FAILED: $*" >&2; exit 1; }

echo "== 1. gpu_tests without a GPU"
"$build/tests/gpu_tests" --gtest_brief=1 >"$work/gpu_tests.log" 2>&1 || { cat "$work/gpu_tests.log"; fail "gpu_tests"; }
grep -E '^\[  (PASSED|SKIPPED) ' "$work/gpu_tests.log"

echo "== 2. sluice --help's resident set"
if [ -x /usr/bin/time ]; then
  kb=$(/usr/bin/time -f %M "$sluice" --help 2>&1 >/dev/null | tail -1)
  echo "sluice --help: $((kb / 1024)) MB resident (limit 40)"
  [ "$kb" -le 40960 ] || fail "sluice --help used $kb KB"
else
  echo "skipped: no /usr/bin/time here"
fi
if ldd "$sluice" | grep -E 'lib(cuda|cublas|cudnn|nccl)'; then fail "sluice links CUDA libraries"; fi

# A few labeled JPEGs: the photos of tests/data/images3.tfrecord, 8 copies each.
python3 bench/pytorch_compare.py make-tree --fixture tests/data/images3.tfrecord --copies 8 \
  --out "$work/pack/photos" 2>/dev/null
train=(train --images photos --image-size 16 --model mlp --epochs 1 --batch 8 --json)

echo "== 3. here, with the CUDA libraries: the plugin loads into sluice"
if (cd "$work/pack" && "$sluice" "${train[@]}" --device cuda) >"$work/here.out" 2>&1; then
  echo "trained on cuda:0 (this machine has a GPU)"
else
  grep -q "no CUDA device" "$work/here.out" || { cat "$work/here.out"; fail "--device cuda here"; }
  grep -m1 "no CUDA device" "$work/here.out"
fi

echo "== 4. a fresh root without CUDA libraries: sluice trains on the CPU"
bash tools/pack_binaries.sh "$work/pack" "$sluice" "$build/libsluice_cuda.so"
cat >"$work/pack/check.sh" <<'EOF'
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
train=(train --images photos --image-size 16 --model mlp --epochs 1 --batch 8 --json)
ls /usr/local/cuda /usr/lib/x86_64-linux-gnu/libcudart* 2>/dev/null && { echo "CUDA is here"; exit 1; }
bin/sluice "${train[@]}" >cpu.json || { echo "training on the CPU failed"; exit 1; }
grep -o '"test_accuracy": *[0-9.]*' cpu.json
bin/sluice "${train[@]}" --device cuda >cuda.out 2>&1 && { echo "--device cuda trained?"; exit 1; }
cat cuda.out
grep -q "libsluice_cuda.so: lib[a-zA-Z]*\.so\.[0-9]*: cannot open shared object file" cuda.out
EOF
bash tools/fresh_root.sh --copy "$work/pack" bash pack/check.sh </dev/null ||
  fail "the CUDA build's sluice in a fresh root"

echo "== 5. the device check's bundle, rehearsed in a fresh root without a GPU"
mkdir -p "$work/device"
# Without the Python module: the rehearsal root has no Python, and its build would cost CI minutes.
PYTHON_FOR_DEVICE=none bash tools/device_bundle.sh --prebuilt "$build" "$work/device" >"$work/bundle.log" 2>&1 ||
  { cat "$work/bundle.log"; fail "tools/device_bundle.sh"; }
grep "^device_bundle: " "$work/bundle.log"
cat >"$work/device/rehearse.sh" <<'EOF'
set -u
cd "$(dirname "$0")"
# The runner as the bundle carries it, as the GPU machine runs it.
tar -xzf bundle.tar.gz -O bundle/scripts/device_check.sh >device_check.sh
DEADLINE_S=300 bash device_check.sh bundle.tar.gz out
rc=$?
grep -q '"part": "cpu_smoke", "status": "passed"' out/parts.jsonl || { echo "the bundle's sluice did not train"; exit 1; }
for part in accuracy speed onnx; do
  grep -q "\"part\": \"$part\", \"status\": \"skipped\".*no device" out/parts.jsonl ||
    { echo "$part: not skipped for want of a device"; exit 1; }
done
exit $rc
EOF
rm -rf "$work/pack"  # step 4's, not needed in this root
bash tools/fresh_root.sh --copy "$work/device" bash device/rehearse.sh </dev/null ||
  fail "the device check's rehearsal in a fresh root"
echo "cuda_build_check: passed"
