#!/usr/bin/env bash
# Data-parallel overhead on one machine (issue 17's goal: >= 0.85x). Alternates, ROUNDS times
# for each model:
#   one process:  sluice train --threads 2 --batch 64
#   two ranks:    mpirun -np 2 sluice train --distributed --threads 1 --batch 32  (global 64)
# on LIMIT Fashion-MNIST training images, one epoch, and prints each run's images/s (the whole
# job's), the medians and their ratio.
# Usage: bench/distributed_overhead.sh [SLUICE [DATA [ROUNDS [LIMIT [MODELS]]]]]
set -euo pipefail
sluice=${1:-build/sluice}
data=${2:-build/fashion-mnist}
rounds=${3:-3}
limit=${4:-20000}
models=${5:-mlp cnn}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if ! ls "$data"/train-*.tfrecord >/dev/null 2>&1; then
  "$sluice" convert fashion-mnist --out "$data" >/dev/null
fi
rate() { sed -n 's/.*"train_images_per_second": *\([0-9.e+-]*\).*/\1/p'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
common=(--data "$data" --epochs 1 --limit "$limit" --seed 1 --json)
echo "model  run  one-process(2 threads)  mpirun -np 2(1 thread each)  images/s"
for model in $models; do
  ones=() twos=()
  for ((r = 1; r <= rounds; r++)); do
    one=$("$sluice" train --model "$model" "${common[@]}" --batch 64 --threads 2 | rate)
    two=$(mpirun -np 2 "$sluice" train --distributed --model "$model" "${common[@]}" \
      --batch 32 --threads 1 | rate)
    ones+=("$one") twos+=("$two")
    printf '%-6s %-4s %-23s %s\n' "$model" "$r" "$one" "$two"
  done
  m1=$(printf '%s\n' "${ones[@]}" | median)
  m2=$(printf '%s\n' "${twos[@]}" | median)
  printf '%-6s median %-21s %-28s ratio %.3f\n' "$model" "$m1" "$m2" "$(awk -v a="$m2" -v b="$m1" 'BEGIN {print a / b}')"
done
