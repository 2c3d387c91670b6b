#include "train/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : options_(std::move(options)), monitor_(options_.monitor, options_.mode, options_.min_delta) {}

absl::Status ReduceLROnPlateau::OnTrainBegin(const Logs& logs) {
  if (options_.factor >= 1.0 || options_.factor <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReduceLROnPlateau: factor must be in (0, 1), got ", options_.factor));
  }
  monitor_.Reset();
  wait_ = 0;
  cooldown_counter_ = 0;
  return absl::OkStatus();
}

absl::Status ReduceLROnPlateau::OnEpochEnd(int64_t epoch, const Logs& logs) {
  // A preempted epoch has no validation, and may be cut short: not one to count.
  if (trainer()->preempting()) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(double value, monitor_.Get(logs, "ReduceLROnPlateau"));
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (monitor_.IsImprovement(value)) {
    monitor_.set_best(value);
    wait_ = 0;
    return absl::OkStatus();
  }
  // As Keras: asked after the count-down, so the epoch that ends the cooldown counts toward
  // patience (cooldown N holds N - 1 epochs after the reduction's).
  if (cooldown_counter_ > 0) return absl::OkStatus();
  if (++wait_ < options_.patience) return absl::OkStatus();
  optimizers::Optimizer& optimizer = trainer()->optimizer();
  // The base rate, which a schedule is scaled by.
  const float base = optimizer.base_learning_rate();
  const float min_lr = static_cast<float>(options_.min_lr);
  if (base > min_lr) {
    optimizer.set_learning_rate(std::max(static_cast<float>(base * options_.factor), min_lr));
    ++reductions_;
    cooldown_counter_ = options_.cooldown;
    wait_ = 0;
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::callbacks
