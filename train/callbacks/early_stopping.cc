#include "train/callbacks/early_stopping.h"

#include <cstdio>

#include "core/status_macros.h"
#include "train/autodiff/variable.h"

namespace sluice::train::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : options_(std::move(options)), monitor_(options_.monitor, options_.mode, options_.min_delta) {}

absl::Status EarlyStopping::OnTrainBegin(const Logs& logs) {
  monitor_.Reset();
  wait_ = 0;
  stopped_epoch_ = -1;
  best_epoch_ = -1;
  best_weights_.clear();
  return absl::OkStatus();
}

absl::Status EarlyStopping::OnEpochEnd(int64_t epoch, const Logs& logs) {
  // A preempted epoch has no validation, and may be cut short: not one to judge.
  if (trainer()->preempting()) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(double value, monitor_.Get(logs, "EarlyStopping"));
  // Keras keeps the first epoch's weights even when it is no improvement (a NaN loss).
  if (options_.restore_best_weights && best_weights_.empty()) {
    SLUICE_ASSIGN_OR_RETURN(best_weights_,
                            autodiff::SnapshotVariables(trainer()->model().Variables()));
  }
  ++wait_;
  if (monitor_.IsImprovement(value)) {
    monitor_.set_best(value);
    best_epoch_ = epoch;
    if (options_.restore_best_weights) {
      SLUICE_ASSIGN_OR_RETURN(best_weights_,
                              autodiff::SnapshotVariables(trainer()->model().Variables()));
    }
    wait_ = 0;
    return absl::OkStatus();
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    trainer()->StopTraining();
    if (options_.verbose > 0)
      std::printf("Epoch %lld: early stopping\n", static_cast<long long>(epoch) + 1);
  }
  return absl::OkStatus();
}

absl::Status EarlyStopping::OnTrainEnd(const Logs& logs) {
  if (!options_.restore_best_weights || best_weights_.empty()) return absl::OkStatus();
  if (options_.verbose > 0 && best_epoch_ >= 0) {
    std::printf("Restoring model weights from the end of the best epoch: %lld.\n",
                static_cast<long long>(best_epoch_) + 1);
  }
  return autodiff::AssignVariables(best_weights_, trainer()->model().Variables(), "EarlyStopping");
}

}  // namespace sluice::train::callbacks
