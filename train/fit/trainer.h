#ifndef SLUICE_TRAIN_FIT_TRAINER_H_
#define SLUICE_TRAIN_FIT_TRAINER_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/element.h"
#include "core/tensor.h"
#include "dataset/auto_shard.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "distributed/communicator.h"
#include "train/backend/compute_precision.h"
#include "train/callbacks/callback.h"
#include "train/callbacks/progress_bar.h"
#include "train/fit/data_parallel.h"
#include "train/fit/deferred_label_checks.h"
#include "train/fit/train_step.h"
#include "train/fit/training_checkpoint.h"
#include "train/layers/module.h"
#include "train/losses/loss.h"
#include "train/losses/sparse_categorical_crossentropy.h"
#include "train/metrics/mean.h"
#include "train/metrics/metric_from_name.h"
#include "train/metrics/prediction_metric.h"
#include "train/metrics/sparse_top_k_accuracy.h"
#include "train/ops/cross_entropy.h"
#include "train/optimizers/dynamic_loss_scale.h"
#include "train/optimizers/gradient_accumulator.h"
#include "train/optimizers/optimizer.h"

namespace sluice::train::fit {

// One entry of Keras' compile(metrics=[...]): a name metrics::MetricFromName knows ("accuracy",
// which resolves by the loss as in Keras, "mae", "top_k_categorical_accuracy", ...), or a
// factory for a metric of your own (each Fit and Evaluate makes fresh ones).
struct MetricSpec {
  MetricSpec(const char* name) : name(name) {}             // NOLINT: {"accuracy", "mae"}
  MetricSpec(std::string name) : name(std::move(name)) {}  // NOLINT
  MetricSpec(std::string name, std::function<std::unique_ptr<metrics::PredictionMetric>()> make)
      : name(std::move(name)), make(std::move(make)) {}
  std::string name;
  std::function<std::unique_ptr<metrics::PredictionMetric>()> make;
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
  std::optional<std::vector<MetricSpec>> metrics;
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

struct EvaluateOptions {
  std::optional<int64_t> steps;  // unset: the whole dataset
};

// Keras' History: the epoch logs of one Fit, by metric name, one value per epoch run.
struct History {
  std::vector<int64_t> epochs;
  std::map<std::string, std::vector<double>> history;
  const std::vector<double>& at(const std::string& name) const { return history.at(name); }
};

// Keras' compile/fit/evaluate/predict for a model fed by a Dataset whose elements are
// {inputs float32 [B, ...], targets [B, ...]} (Predict also takes {inputs}); the targets are
// whatever the loss takes (class indices int32/int64 [B] for the default loss).
//
// Fit reads the training pipeline through ONE iterator for the whole run (the dataset repeated,
// each pass a new repetition, so a Shuffle reshuffles each epoch), so that a checkpoint holds
// the exact input position: Trainer::SaveCheckpoint at any step boundary, then LoadCheckpoint and
// Fit on a fresh Trainer continue with the same batches, variables, optimizer slots and metric
// sums: on the CPU with seeds set, the same losses as a run never interrupted. An epoch's end is
// seen from the pass's element counter (Enumerate): the first element of the next pass is held
// back for the next epoch (and saved with a checkpoint).
//
// TrainerOptions::communicator makes the same calls data-parallel over several processes.
//
// Each step measures the time spent waiting for the input (Iterator::GetNext) and computing
// (forward, backward, update, metrics); each epoch reports the waiting share as
// "input_wait_share" and the rate as "images_per_second".
class Trainer : public callbacks::TrainingLoop {
 public:
  // `model` and `optimizer` are not owned and must outlive the trainer.
  Trainer(layers::Module& model, optimizers::Optimizer& optimizer, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  absl::StatusOr<History> Fit(const Dataset& train, FitOptions options = {});
  // The loss and metrics over `data` with training = false.
  absl::StatusOr<callbacks::Logs> Evaluate(const Dataset& data, EvaluateOptions options = {});
  // The outputs (training = false) of every batch, concatenated on the host: float32 [N, ...].
  absl::StatusOr<Tensor> Predict(const Dataset& data);

  // Saves the variables, optimizer state, loop position and, during Fit, the pipeline's
  // position and the epoch's metric sums. FailedPrecondition inside a gradient accumulation
  // (its partial sums are not saved): save every accumulation_steps steps.
  absl::Status SaveCheckpoint(const std::string& path) override;
  // Restores the variables and optimizer state now (checking names and shapes); the next Fit
  // resumes at the saved epoch, step and input position. Not during Fit.
  // A weights-only file (SaveWeights) restores the variables and their freezing alone. The
  // model must be built (layers::Module::Build) first.
  absl::Status LoadCheckpoint(const std::string& path);
  // Saves only the model's variables and which are frozen (Keras' save_weights): about the
  // model's size, whatever the pipeline holds. Data-parallel: rank 0 writes; call on every rank.
  absl::Status SaveWeights(const std::string& path) override;

  // Ends Fit after the current step (Keras' model.stop_training = True).
  void StopTraining() override { stop_training_ = true; }
  bool stop_training() const override { return stop_training_; }

  layers::Module& model() override { return model_; }
  optimizers::Optimizer& optimizer() override { return optimizer_; }
  int64_t global_step() const override { return global_step_; }
  // The epoch in progress during Fit (0-based).
  int64_t epoch() const override { return epoch_; }

 private:
  friend class TrainStepContext;
  struct Metrics;
  absl::StatusOr<std::unique_ptr<Metrics>> MakeMetrics() const;
  absl::Status CheckLoss(absl::string_view who) const;
  // The compiled loss of (y_true, y_pred) plus the regularisation penalties.
  absl::StatusOr<Tensor> CompiledLoss(const Tensor& y_true, const Tensor& y_pred,
                                      ops::LabelRangeCheck& label_check);
  // All-reduces (data-parallel), unscales (loss scaling), accumulates or applies.
  absl::Status ApplyGradients(std::vector<std::optional<Tensor>> grads,
                              const std::vector<autodiff::Variable*>& vars);
  struct EpochResult {
    callbacks::Logs logs;
    int64_t steps = 0;       // taken in this call
    int64_t images = 0;      // trained on in this call
    bool completed = false;  // false: StopTraining cut the epoch short
  };
  // The steps of Fit: set up its state and pipeline, restore a loaded checkpoint, run one epoch
  // (with validation and the epoch callbacks) and return its logs.
  absl::Status StartFit(const Dataset& train, const FitOptions& options);
  // Data-parallel: this rank's shard of `data` (described on rank 0's progress stream by Fit).
  absl::StatusOr<Dataset> ShardForRank(const Dataset& data, absl::string_view who,
                                       const FitOptions* options);
  // Data-parallel: after an epoch some peer ended early, skips this rank's rest of the pass, so
  // that the next epoch starts at the next pass on every rank.
  absl::Status SkipToNextPass();
  // Data-parallel: the training step's number of steps per pass as every rank can take it:
  // the least of the ranks' known cardinalities, else unknown (-2).
  absl::StatusOr<int64_t> AgreedCardinality(int64_t cardinality);
  absl::Status ResumeFromCheckpoint();
  // Builds an unbuilt model (its lazy layers) for inputs of `input_shape` on device_, checking
  // that its variables' names are unique.
  absl::Status BuildModel(const Shape& input_shape, absl::string_view who);
  // Data-parallel: rank 0 wrote a file (`written` there); every rank learns whether it could.
  absl::Status AgreeOnWrite(const std::string& path, const absl::Status& written);
  std::vector<std::string> FrozenVariableNames();
  // The profiler's step spans (category "step") and their phases (category "phase"), which
  // partition each step: BeginPhases starts a step, MarkPhase closes the phase that ends now,
  // EndPhases records the step. Nothing happens unless the profiler is recording.
  int64_t BeginPhases();
  void MarkPhase(const char* phase);
  void EndPhases(int64_t step_start);
  absl::Status MaybeStartProfile(const FitOptions& options);
  absl::Status MaybeStopProfile(const FitOptions& options, bool fit_ends);
  // The sum of the model's regularisation penalties (Module::AddLosses), unset when it has none.
  absl::StatusOr<std::optional<Tensor>> RegularizationLoss();
  absl::StatusOr<callbacks::Logs> FitEpoch(const FitOptions& options,
                                           std::optional<int64_t> steps_in_epoch);
  absl::StatusOr<std::optional<Element>> NextTrainingElement();
  absl::Status TrainStep(const Tensor& images, const Tensor& labels,
                         ops::LabelRangeCheck& label_check);
  // `batch` with its tensors from index `first` on copied to the model's device (those that
  // PrefetchToDevice already put there pass through).
  absl::StatusOr<Element> ToModelDevice(const Element& batch, size_t first) const;
  // `data` with its batches copied ahead to the model's device, when that is not the host.
  Dataset OnModelDevice(const Dataset& data) const;
  // Reads the model's device into device_, and fails (naming `who`) when it cannot run the
  // precision policy. Fit, Evaluate and Predict start with it.
  absl::Status UseModelDevice(absl::string_view who);
  // Loss scaling (TrainerOptions::loss_scale): made by the first Fit that needs it. ScaleLoss:
  // the loss times the scale (and / ranks when data-parallel), on the loss's device.
  absl::Status StartLossScaling(const FitOptions& options);
  absl::StatusOr<Tensor> ScaleLoss(const Tensor& loss);
  absl::Status RunEpoch(const FitOptions& options, std::optional<int64_t> steps_in_epoch,
                        callbacks::ProgressBar* progress, EpochResult& result);
  // The metrics' values: over every rank when data-parallel (a collective).
  absl::StatusOr<callbacks::Logs> MetricLogs(const Metrics& metrics,
                                             const std::string& prefix = "");

  layers::Module& model_;
  optimizers::Optimizer& optimizer_;
  TrainerOptions options_;
  std::shared_ptr<const losses::Loss> loss_;  // options_.loss, or the default
  Device device_;  // the model's, read when Fit, Evaluate or Predict starts
  std::unique_ptr<Metrics> train_metrics_;
  int64_t phase_mark_ns_ = 0;  // the profiler's clock at the last phase boundary; 0: none
  bool profiling_ = false;     // Fit's profile_steps started the profiler

  // The loop's position.
  int64_t epoch_ = 0;
  int64_t step_in_epoch_ = 0;
  int64_t global_step_ = 0;
  bool stop_training_ = false;
  bool in_fit_ = false;

  // During Fit: the training pipeline and the element held back for the next epoch.
  std::unique_ptr<Iterator> iterator_;
  std::optional<Element> pending_;
  int64_t pass_length_ = -1;  // steps in one pass, once seen; -1: unknown

  // The label checks of the steps whose logs nobody read yet; checked when the logs are read,
  // at the epoch's end and after this many steps at the latest.
  static constexpr size_t kMaxDeferredLabelChecks = 64;
  DeferredLabelChecks label_checks_;

  // Made by the first Fit that needs it, and kept by the trainer across Fits (as Keras keeps it
  // in the optimizer), with the scale on the model's device for the loss it multiplies.
  std::optional<optimizers::DynamicLossScale> loss_scale_;
  std::optional<Tensor> loss_scale_tensor_;
  float loss_scale_tensor_value_ = 0;

  // Set when TrainerOptions::communicator has more than one rank.
  std::optional<DataParallel> dp_;
  // Data-parallel without gradient accumulation: every step all-reduces its gradients from the
  // tape's hook, and the loss is divided by the ranks so that the all-reduce only sums. (With
  // accumulation only the accumulated mean is all-reduced.)
  // Data-parallel, the built-in step divides the loss by the ranks and all-reduces gradients
  // during the backward pass; a custom step's are averaged when it applies them.
  bool ReducesEveryStep() const {
    return dp_.has_value() && !accumulator_.has_value() && !options_.train_step;
  }

  std::optional<optimizers::GradientAccumulator> accumulator_;
  int accumulated_ = 0;  // micro-batches summed since the last update

  // Set by LoadCheckpoint, used by the next Fit.
  std::optional<TrainingCheckpoint> resume_;
  std::string resume_path_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_TRAINER_H_
