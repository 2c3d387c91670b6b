#ifndef SLUICE_TRAIN_FIT_TRAINER_OPTIONS_H_
#define SLUICE_TRAIN_FIT_TRAINER_OPTIONS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "dataset/auto_shard.h"
#include "dataset/dataset.h"
#include "distributed/communicator.h"
#include "train/backend/compute_precision.h"
#include "train/callbacks/callback.h"
#include "train/fit/data_parallel.h"
#include "train/fit/train_step.h"
#include "train/losses/loss.h"
#include "train/metrics/prediction_metric.h"
#include "train/optimizers/dynamic_loss_scale.h"

namespace sluice::train::fit {

// One entry of Keras' compile(metrics=[...]): a name metrics::MetricFromName knows ("accuracy",
// which resolves by the loss as in Keras, "mae", "top_k_categorical_accuracy", ...), or a
// factory for a metric of your own (each Fit and Evaluate makes fresh ones).
struct MetricSpec {
  MetricSpec(const char* name) : name(name) {}             // NOLINT: "accuracy"
  MetricSpec(std::string name) : name(std::move(name)) {}  // NOLINT
  MetricSpec(std::string name, std::function<std::unique_ptr<metrics::PredictionMetric>()> make)
      : name(std::move(name)), make(std::move(make)) {}
  std::string name;
  std::function<std::unique_ptr<metrics::PredictionMetric>()> make;
};

// Keras' compile(metrics=[...]) list, or unset. It is written as Keras' list is:
// `.metrics = {"accuracy", "mae"}` (a std::optional of a vector needed {{"accuracy", "mae"}}),
// `.metrics = std::vector<MetricSpec>{...}`, or `.metrics = {}` (unset).
class MetricList {
 public:
  MetricList() = default;
  MetricList(std::initializer_list<MetricSpec> specs) : specs_(specs) {}   // NOLINT
  MetricList(std::vector<MetricSpec> specs) : specs_(std::move(specs)) {}  // NOLINT
  MetricList(std::nullopt_t) {}                                            // NOLINT

  // Whether a list was given (an empty one included: no metrics); std::optional's names too.
  explicit operator bool() const { return specs_.has_value(); }
  bool has_value() const { return specs_.has_value(); }
  const std::vector<MetricSpec>& value() const { return specs_.value(); }
  const std::vector<MetricSpec>& operator*() const { return *specs_; }
  const std::vector<MetricSpec>* operator->() const { return &*specs_; }

 private:
  std::optional<std::vector<MetricSpec>> specs_;
};

// What Keras' compile() fixes besides the model and optimizer.
struct TrainerOptions {
  // The loss Fit minimises and Evaluate reports, a reduced one (train/losses/). Unset:
  // SparseCategoricalCrossentropy(from_logits = true), the classifier's. The model's
  // regularisation penalties (Module::AddLosses) are added to it, and the logged "loss" includes
  // them, as in Keras.
  std::shared_ptr<const losses::Loss> loss;
  // The metrics logged beside "loss". Unset: {"accuracy"} with the default loss, none with a
  // loss of your own.
  MetricList metrics;
  // Adds "top_<k>_accuracy" (sparse labels) when > 0.
  int top_k = 0;
  // Keras' overridden Model.train_step (train/fit/train_step.h): replaces the step's forward,
  // loss, gradient and update; Fit still runs everything around it. Not with loss scaling.
  TrainStepFn train_step;
  // When the model is not on the host, Fit, Evaluate and Predict copy this many batches ahead
  // to its device while the current step computes (data::PrefetchToDevice); 0 copies each batch
  // when the step takes it.
  int64_t device_prefetch = 2;
  // Keras' mixed-precision policy for the model's matmuls and convolutions
  // (train/backend/compute_precision.h); Fit, Evaluate and Predict fail at once, saying why, on
  // a device that cannot run it.
  backend::Precision precision = backend::Precision::kFloat32;
  // Keras' run_eagerly. False (the default): Fit's built-in step is traced on the first batch of
  // each shape and replayed after it (train/function/, fit/compiled_train_step.h), with the same
  // results bit for bit; the last, smaller batch of an epoch runs eagerly. A custom train_step,
  // data-parallel training, loss scaling and gradient accumulation run eagerly either way; check
  // numerics checks replays too. True: op by op, the debugging mode (the profile then shows layers
  // and backward ops; compiled, the replayed kernels).
  bool run_eagerly = false;
  // Dynamic loss scaling (optimizers::DynamicLossScale, Keras' LossScaleOptimizer). Unset: on,
  // with Keras' defaults, exactly when `precision` is mixed_float16; set: on with these options
  // under any policy. Fit logs the scale as "loss_scale". Not with gradient accumulation.
  std::optional<optimizers::DynamicLossScaleOptions> loss_scale;

  // Synchronous data-parallel training over this group of processes (distributed/, Keras'
  // MultiWorkerMirroredStrategy): not owned; unset or of size 1, one process trains alone.
  // Each rank runs the same program with the same model:
  //  - Fit first checks that every rank's model has the same variables, then copies rank 0's
  //    values to all;
  //  - Fit and Evaluate read only this rank's shard of their dataset (`auto_shard`);
  //  - each step averages the gradients over the ranks, all-reduced in buckets of
  //    `bucket_bytes` while the backward pass goes on;
  //  - every rank takes the same number of steps: an epoch ends for all when one rank's shard
  //    ends, and the other ranks skip the rest of their pass;
  //  - metrics and logs are over all ranks ("images_per_second" counts every rank's images);
  //  - only rank 0 prints progress and writes checkpoints, which hold every rank's input
  //    position. SaveCheckpoint and LoadCheckpoint are called on every rank.
  // The loss is each rank's mean over its own batch, so ranks with per-rank batch B/N train as
  // one process with batch B.
  distributed::Communicator* communicator = nullptr;
  AutoShardPolicy auto_shard = AutoShardPolicy::kAuto;
  int64_t bucket_bytes = kDefaultBucketBytes;
};

struct FitOptions {
  // Train until this epoch count (Keras' `epochs`); a Fit resumed from a checkpoint starts at the
  // checkpoint's epoch and step.
  int64_t epochs = 1;
  // Steps per epoch. Unset: one pass over the dataset per epoch. Set: epochs of this many steps,
  // the dataset read on across epoch boundaries (and repeated when it ends), as Keras.
  std::optional<int64_t> steps_per_epoch;
  // Evaluated after each epoch; its metrics enter the logs as "val_<name>".
  std::optional<Dataset> validation_data;
  // Not owned; called in order.
  std::vector<callbacks::Callback*> callbacks;
  // Sum the gradients of this many steps (micro-batches) and apply their mean once.
  int accumulation_steps = 1;
  // The pipeline seed (Options::seed) of the training pipeline: unseeded random ops (Shuffle
  // without its own seed) then repeat between runs. Unset: the pipeline's own options.
  std::optional<uint64_t> seed;
  // 0: silent; 1: a progress bar on a terminal (one line per epoch otherwise); 2: one line per
  // epoch.
  int verbose = 1;
  std::FILE* progress_stream = nullptr;  // where progress goes; nullptr: stdout
  // Keras' TensorBoard(profile_batch=(from, to)): profile global steps from..to (1-based,
  // inclusive) into `profile_dir` (profiler/profiler.h: a Chrome trace, the same under
  // profile_dir/plugins/profile/ for TensorBoard, and a summary printed with the progress).
  // Data-parallel: each rank into profile_dir/rank<r>.
  std::optional<std::pair<int64_t, int64_t>> profile_steps;
  std::string profile_dir;
};

// InvalidArgument naming the first field of `options` out of its range.
absl::Status CheckFitOptions(const FitOptions& options);

struct EvaluateOptions {
  std::optional<int64_t> steps;  // unset: the whole dataset
};

// Keras' History: the epoch logs of one Fit, by metric name, one value per epoch run.
struct History {
  std::vector<int64_t> epochs;
  std::map<std::string, std::vector<double>> history;
  const std::vector<double>& at(const std::string& name) const { return history.at(name); }
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_TRAINER_OPTIONS_H_
