#!/usr/bin/env bash
# Training throughput, sluice against PyTorch on this machine: one step (forward, gradient,
# optimizer update) at batch 64 on 28x28x1 inputs for the mlp, cnn, resnet-small and resnet-20
# models, 2 threads each, medians of REPEATS measurements. Prints images/s side by side and the ratio.
#   bench/compare_pytorch_train.sh [TRAIN_STEP_BENCH] [sgd|adam]
#   TORCHVISION=resnet18 [SIZE=224 BATCH=32 ROUNDS=5] bench/compare_pytorch_train.sh ...
#   MODE=compiled (default eager): sluice's step traced once and replayed (train/function/), as Fit
#     runs it by default.
#     instead: torchvision's model imported from ONNX against PyTorch's, interleaved (issue 47).
# TRAIN_STEP_BENCH defaults to build/bench/train_step_bench (configure with
# -DSLUICE_BUILD_BENCH=ON). Needs Debian's python3-torch (/usr/bin/python3) on an optimised BLAS:
# tools/setup.sh --bench installs both.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's PyTorch does its matrix products through libblas.so.3. The reference BLAS there makes
# PyTorch 5-16x slower than any user runs it, so refuse that anchor unless asked for it.
# (awk's early exit can end ldconfig with SIGPIPE, which pipefail would make fatal.)
blas_link=$(ldconfig -p | awk '/libblas\.so\.3 .*x86-64/ {print $NF; exit}' || true)
blas=$(readlink -f "${blas_link:-/nonexistent}" 2>/dev/null || true)
case "$blas" in
  */openblas*/* | */blis*/* | */mkl*/* | */atlas/*) ;;
  *)
    if [ "${ALLOW_REFERENCE_BLAS:-0}" != 1 ]; then
      echo "compare_pytorch_train: PyTorch would use the BLAS at '${blas:-none}', not an optimised" \
        "one; run tools/setup.sh --bench (OpenBLAS), or set ALLOW_REFERENCE_BLAS=1 to measure it" >&2
      exit 1
    fi
    ;;
esac
bench=${1:-build/bench/train_step_bench}
optimizer=${2:-sgd}
threads=${THREADS:-2}
repeats=${REPEATS:-5}
mode=${MODE:-eager}
python=${PYTHON:-/usr/bin/python3}  # Debian's, where python3-torch installs
# Both frameworks run on Debian's libgomp (oneDNN and PyTorch are built with OpenMP). Its default
# spin-waiting between parallel regions makes a 2-thread team starve itself whenever another
# process wants a core (a step took 80x longer on a busy 2-core machine); libgomp reads the policy
# only at load time, so it is set here, the same for both.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg), OMP_WAIT_POLICY=$OMP_WAIT_POLICY, BLAS $blas"
if [ -n "${TORCHVISION:-}" ]; then
  # Issue 47's goal: torchvision's TORCHVISION (e.g. resnet18) at SIZE (224) x SIZE x 3, batch
  # BATCH (32), exported to ONNX with its batch norms kept and imported by sluice, against the
  # same torchvision model trained by PyTorch; ROUNDS (5) rounds, each one measurement of each,
  # interleaved, so that the machine's drift reaches both.
  size=${SIZE:-224} batch=${BATCH:-32} rounds=${ROUNDS:-5}
  "$python" tests/onnx/make_models.py torchvision "$TORCHVISION" training "$size" "$work/base.onnx"
  echo "sluice: $bench --onnx=... --size=$size --batch=$batch --mode=$mode; pytorch: torchvision $TORCHVISION;" \
    "$rounds interleaved rounds of 5 steps after 2 warm-up steps, $optimizer, $threads threads"
  for r in $(seq "$rounds"); do
    SLUICE_THREADS=$threads "$bench" --onnx="$work/base.onnx" --size="$size" --batch="$batch" --mode="$mode" \
      --benchmark_filter="/onnx/${optimizer}/" --benchmark_min_time=5 --benchmark_format=json \
      >"$work/sluice-$r.json"
    "$python" bench/pytorch_train_compare.py --threads "$threads" --optimizer "$optimizer" \
      --models "torchvision:$TORCHVISION" --size "$size" --batch "$batch" --steps 5 --warmup 2 \
      --repeats 1 >"$work/torch-$r.json"
  done
  "$python" - "$work" "$rounds" "$TORCHVISION" "$batch" "$size" <<'PY'
import json, statistics, sys
work, rounds, name, batch, size = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
ours, theirs = [], []
for r in range(1, rounds + 1):
    s = json.load(open(f"{work}/sluice-{r}.json"))
    ours += [b["images_per_second"] for b in s["benchmarks"] if b.get("run_type") == "iteration"]
    theirs.append(json.load(open(f"{work}/torch-{r}.json"))["images_per_second"][f"torchvision:{name}"])
print(f"{name} at {size}x{size}, batch {batch}: sluice {statistics.median(ours):.2f} img/s "
      f"(rounds {', '.join(f'{v:.2f}' for v in ours)}), pytorch {statistics.median(theirs):.2f} "
      f"img/s (rounds {', '.join(f'{v:.2f}' for v in theirs)}), ratio "
      f"{statistics.median(ours) / statistics.median(theirs):.2f}")
PY
  exit 0
fi
echo "sluice: SLUICE_THREADS=$threads $bench --mode=$mode --benchmark_filter='/$optimizer/'" \
  "--benchmark_repetitions=$repeats"
SLUICE_THREADS=$threads "$bench" --mode="$mode" --benchmark_filter="/${optimizer}/" \
  --benchmark_repetitions="$repeats" --benchmark_format=json >"$work/sluice.json"
echo "pytorch: bench/pytorch_train_compare.py --threads $threads --optimizer $optimizer" \
  "--repeats $repeats"
"$python" bench/pytorch_train_compare.py --threads "$threads" --optimizer "$optimizer" \
  --repeats "$repeats" >"$work/torch.json"
"$python" - "$work/sluice.json" "$work/torch.json" "$optimizer" "$mode" <<'PY'
import json, statistics, sys
s = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
optimizer, mode = sys.argv[3], sys.argv[4]
rates = {}
for b in s["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    model = b["run_name"].split("/")[1]
    rates.setdefault(model, []).append(b["images_per_second"])
print(f"{'model':12} {'sluice img/s':>13} {'pytorch img/s':>14} {'ratio':>6}   "
      f"(medians, batch 64, {optimizer}, sluice {mode}, torch {t['torch']}, {t['threads']} threads)")
for model in ("mlp", "cnn", "resnet-small", "resnet-20"):
    ours = statistics.median(rates[model])
    theirs = t["images_per_second"][model]
    print(f"{model:12} {ours:13.0f} {theirs:14.0f} {ours / theirs:6.2f}")
PY
