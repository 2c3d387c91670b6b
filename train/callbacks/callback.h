#ifndef SLUICE_TRAIN_CALLBACKS_CALLBACK_H_
#define SLUICE_TRAIN_CALLBACKS_CALLBACK_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/callbacks/training_loop.h"

namespace sluice::train::callbacks {

// Metric values by name, as Keras' `logs`: "loss", "accuracy", "top_5_accuracy", their "val_"
// twins, "learning_rate", "input_wait_share", "images_per_second".
using Logs = std::map<std::string, double>;

// The value of `key` in `logs`, or nullopt.
inline std::optional<double> LogValue(const Logs& logs, absl::string_view key) {
  auto it = logs.find(std::string(key));
  if (it == logs.end()) return std::nullopt;
  return it->second;
}

// A hook into fit::Trainer::Fit, as keras.callbacks.Callback. Fit calls set_trainer() first, then
// the On* methods in this order: OnTrainBegin, per epoch OnEpochBegin, OnBatchEnd after each step,
// OnEpochEnd (with the epoch's metrics and validation metrics), and OnTrainEnd. An error from a
// callback, or any other, stops Fit and is returned by it; the callbacks whose OnTrainBegin
// returned then get OnTrainAborted instead of OnTrainEnd. A callback may call
// trainer()->StopTraining() (Keras' model.stop_training = True), read and set the model's
// variables, or save a checkpoint.
class Callback {
 public:
  virtual ~Callback() = default;

  void set_trainer(TrainingLoop* trainer) { trainer_ = trainer; }
  TrainingLoop* trainer() const { return trainer_; }

  virtual absl::Status OnTrainBegin(const Logs& logs) { return absl::OkStatus(); }
  virtual absl::Status OnTrainEnd(const Logs& logs) { return absl::OkStatus(); }
  // Fit is returning `error` (a preemption's stop included) after this callback's OnTrainBegin
  // succeeded: release what OnTrainBegin took (a signal handler), without OnTrainEnd's work.
  // May follow OnTrainEnd when a later callback's OnTrainEnd failed.
  virtual void OnTrainAborted(const absl::Status& error) {}
  // `epoch` counts from 0.
  virtual absl::Status OnEpochBegin(int64_t epoch, const Logs& logs) { return absl::OkStatus(); }
  virtual absl::Status OnEpochEnd(int64_t epoch, const Logs& logs) { return absl::OkStatus(); }
  // `batch` counts from 0 within the epoch; `logs` holds the epoch's running metrics when any
  // callback's NeedsBatchLogs() said so for this step, else only "learning_rate" and
  // "input_wait_share".
  virtual absl::Status OnBatchEnd(int64_t batch, const Logs& logs) { return absl::OkStatus(); }
  // Asked after each step, before OnBatchEnd (trainer()->global_step() already counts the step):
  // whether this step's OnBatchEnd reads the running metrics. Reading them copies them from the
  // model's device, which waits for its queued work; Fit does it only for steps that some
  // callback (or the progress bar) asks for. Keras calls batch hooks only for callbacks that
  // implement them, for the same reason.
  virtual bool NeedsBatchLogs() const { return true; }
  // Asked at each epoch's start: whether NeedsBatchLogs() may say true at any step of the epoch.
  // Data-parallel ranks agree on it then, and per step only where it is true; where it is false
  // no step reads the metrics, whatever NeedsBatchLogs() says, so that every rank makes the same
  // collectives.
  virtual bool MayNeedBatchLogs() const { return true; }
  // Asked by Fit once the model is built, before the first step: checkpoints
  // (Trainer::SaveCheckpoint's) to continue from, best first, as Keras' BackupAndRestore
  // restores; empty: none. Fit resumes exactly where the first readable one was saved, warning
  // about each unreadable one it skips. The first callback that names any wins.
  virtual absl::StatusOr<std::vector<std::string>> CheckpointsToResume() {
    return std::vector<std::string>{};
  }

 private:
  TrainingLoop* trainer_ = nullptr;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_CALLBACK_H_
