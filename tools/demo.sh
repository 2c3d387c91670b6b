#!/usr/bin/env bash
# The main job, end to end: install what is missing, build, convert
# Fashion-MNIST (Debian's dataset-fashion-mnist) into JPEG TFRecords, inspect
# them, benchmark the input pipeline on them, measure raw TFRecord read
# throughput, then train the cnn on the JPEG TFRecords and print its test
# accuracy and training images/s. SLUICE_EPOCHS (default 10, docs/benchmarks.md's
# accuracy run: about 20 minutes on 2 cores) and SLUICE_MODEL (default cnn)
# change the training run.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
data=${SLUICE_DATA:-build/fashion-mnist}

step "setup and build"
bash tools/build.sh

step "convert Fashion-MNIST into JPEG TFRecord shards ($data)"
./build/sluice convert fashion-mnist --out "$data" --shards 4

step "inspect a converted shard and the independent golden files"
./build/sluice inspect --records 1 "$data/train-00000-of-00004.tfrecord"
./build/sluice inspect --records 1 tests/data/images3.tfrecord tests/data/small100.tfrecord.gz

step "benchmark the input pipeline on Fashion-MNIST (decode, crop 28x28, flip, normalize, batch 64)"
./build/sluice bench --files "$data/train-*.tfrecord" --image-size 28 --seconds 5

step "TFRecord read throughput (CRC verified) beside cat"
./build/bench/tfrecord_read_bench --benchmark_min_time=0.5 --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true

epochs=${SLUICE_EPOCHS:-10}
model=${SLUICE_MODEL:-cnn}
step "train $model on the JPEG TFRecords for $epochs epochs (TensorBoard logs in build/logs)"
./build/sluice train --data "$data" --model "$model" --epochs "$epochs" --schedule cosine \
  --logdir build/logs --checkpoint "build/$model.ckpt"
