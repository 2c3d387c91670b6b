#ifndef SLUICE_TRAIN_FIT_TRAINER_H_
#define SLUICE_TRAIN_FIT_TRAINER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/element.h"
#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "distributed/communicator.h"
#include "train/callbacks/callback.h"
#include "train/callbacks/progress_bar.h"
#include "train/callbacks/training_loop.h"
#include "train/fit/compiled_loss.h"
#include "train/fit/compiled_metrics.h"
#include "train/fit/epoch_iterator.h"
#include "train/fit/epoch_loop.h"
#include "train/fit/profile_window.h"
#include "train/fit/replicas.h"
#include "train/fit/step_phases.h"
#include "train/fit/step_strategy.h"
#include "train/fit/train_step.h"
#include "train/fit/trainer_options.h"
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

// Keras' compile/fit/evaluate/predict for a model fed by a Dataset whose elements are
// {inputs float32 [B, ...], targets [B, ...]} (Predict also takes {inputs}); the targets are
// whatever the loss takes (class indices int32/int64 [B] for the default loss).
//
// Fit reads the training pipeline through ONE iterator for the whole run (EpochIterator), so that
// a checkpoint holds the exact input position: Trainer::SaveCheckpoint at any step boundary, then
// LoadCheckpoint and Fit on a fresh Trainer continue with the same batches, variables, optimizer
// slots and metric sums: on the CPU with seeds set, the same losses as a run never interrupted.
//
// The trainer is assembled from pieces that each own their state, as Keras' is: the
// EpochIterator (the input position), CompiledLoss and CompiledMetrics (with the deferred label
// checks), a StepStrategy chain (data parallelism, gradient accumulation, loss scaling), the
// TrainStep (eager, or the user's), the EpochLoop (one epoch's steps) and Replicas (the
// processes that train together).
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
  // Data-parallel: a sum over the ranks (a collective).
  absl::StatusOr<bool> AnyReplica(bool flag) override;
  int replicas() const override { return replicas_.size(); }
  void StopForPreemption() override { position_.preemption_requested = true; }
  bool preempting() const override { return position_.preempting; }

  // Ends Fit after the current step (Keras' model.stop_training = True).
  void StopTraining() override { position_.stop_training = true; }
  bool stop_training() const override { return position_.stop_training; }

  layers::Module& model() override { return model_; }
  optimizers::Optimizer& optimizer() override { return optimizer_; }
  int64_t global_step() const override { return position_.global_step; }
  // The epoch in progress during Fit (0-based); after it, the complete epochs, restored ones
  // included.
  int64_t epoch() const override { return position_.epoch; }

 private:
  // The steps of Fit: set up its pieces and pipeline (reading the first batch to build an
  // unbuilt model), restore a loaded checkpoint, agree on the epoch's length, run one epoch
  // (with validation and the epoch callbacks) and return its logs.
  absl::Status StartFit(const Dataset& train, const FitOptions& options);
  void MakeStep(const FitOptions& options);
  // Applies a checkpoint LoadCheckpoint or a resuming callback read.
  absl::Status Restore(TrainingCheckpoint ckpt, const std::string& path);
  // The first readable checkpoint a callback names (CheckpointsToResume), loaded for this Fit.
  absl::Status ResumeFromCallbacks(const std::vector<callbacks::Callback*>& callbacks);
  absl::Status ResumeFromCheckpoint();
  absl::StatusOr<std::optional<int64_t>> StepsInEpoch(const Dataset& train,
                                                      const FitOptions& options);
  // Fit's callbacks' OnTrainBegin (counting in `began` those that returned), its epochs, and
  // their OnTrainEnd.
  absl::StatusOr<History> RunEpochs(const FitOptions& options,
                                    std::optional<int64_t> steps_in_epoch, size_t& began);
  absl::StatusOr<callbacks::Logs> FitEpoch(const FitOptions& options,
                                           std::optional<int64_t> steps_in_epoch);
  std::optional<callbacks::ProgressBar> MakeProgressBar(const FitOptions& options,
                                                        std::optional<int64_t> steps) const;
  // Reads the model's device into device_, and fails (naming `who`) when it cannot run the
  // precision policy. Fit, Evaluate and Predict start with it.
  absl::Status UseModelDevice(absl::string_view who);
  // Builds an unbuilt model (its lazy layers) for inputs of `input_shape` on device_, checking
  // that its variables' names are unique.
  absl::Status BuildModel(const Shape& input_shape, absl::string_view who);
  // An Evaluate or Predict batch, checked, on the model's device, the model built for it.
  absl::StatusOr<Element> PrepareBatch(absl::string_view who, const Element& batch,
                                       bool need_targets);
  // Data-parallel SaveCheckpoint: rank 0 writes every rank's position.
  absl::Status WriteEveryRank(const std::string& path, TrainingCheckpoint& ckpt);

  layers::Module& model_;
  optimizers::Optimizer& optimizer_;
  const TrainerOptions options_;
  CompiledLoss loss_;
  Replicas replicas_;
  Device device_;  // the model's, read when Fit, Evaluate or Predict starts
  std::unique_ptr<CompiledMetrics> train_metrics_;  // made by the first Fit
  LoopPosition position_;
  bool in_fit_ = false;
  // Made by the first Fit that needs it (StartLossScaling), and kept across Fits (as Keras keeps
  // it in the optimizer).
  std::optional<optimizers::DynamicLossScale> loss_scale_;
  StepPhases phases_;
  // Made by each Fit and kept after it: a checkpoint asks it whether it may be taken.
  std::unique_ptr<StepStrategy> strategy_;

  // During Fit.
  std::unique_ptr<EpochIterator> input_;
  std::unique_ptr<TrainStep> step_;
  std::unique_ptr<ProfileWindow> profile_;

  // Set by LoadCheckpoint, used by the next Fit.
  std::optional<TrainingCheckpoint> resume_;
  std::string resume_path_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_TRAINER_H_
