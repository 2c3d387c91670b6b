#!/usr/bin/env bash
# Runs `sluice bench` and the PyTorch DataLoader baseline (bench/pytorch_compare.py) on the same
# TFRecord files of real photos and prints both rates and their ratio.
#   bench/compare_pytorch.sh [SLUICE_BINARY] [SECONDS]
# RESTART_INTERVAL=N converts the photos with `sluice convert images --restart-interval N`
# (lossless; both sides then read those files).
# Needs python3-torch, python3-torchvision, python3-pil (Debian packages; tools/setup.sh --bench).
set -euo pipefail
cd "$(dirname "$0")/.."
sluice=${1:-build/sluice}
seconds=${2:-20}
python=${PYTHON:-/usr/bin/python3}  # Debian's, where python3-torch installs
copies=${COPIES:-100}  # x 3 fixture photos
restart_interval=${RESTART_INTERVAL:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" bench/pytorch_compare.py make-tree --fixture tests/data/images3.tfrecord \
  --copies "$copies" --out "$work/tree"
"$sluice" convert images "$work/tree" --out "$work/set" --shards 4 \
  --restart-interval "$restart_interval" >/dev/null
files="$work/set/train-*.tfrecord"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "photos: $((copies * 3)) files, restart interval $restart_interval MCUs"
echo "sluice: $sluice bench --files SET --seconds $seconds --json"
"$sluice" bench --files "$files" --seconds "$seconds" --json >"$work/sluice.json"
echo "pytorch: bench/pytorch_compare.py run --files SET --seconds $seconds --workers 2"
"$python" bench/pytorch_compare.py run --files "$files" --seconds "$seconds" --workers 2 \
  >"$work/torch.json"
"$python" - "$work/sluice.json" "$work/torch.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
print(f"sluice : {s['elements_per_second']:8.1f} images/s  (bottleneck {s['bottleneck']}, "
      f"peak RSS {s['peak_rss_bytes'] / 1e6:.0f} MB)")
print(f"pytorch: {t['images_per_second']:8.1f} images/s  ({t['workers']} workers, "
      f"torch {t['torch']})")
print(f"ratio sluice / pytorch: {s['elements_per_second'] / t['images_per_second']:.2f}")
PY
