#ifndef SLUICE_TRAIN_CALLBACKS_TERMINATE_ON_NAN_H_
#define SLUICE_TRAIN_CALLBACKS_TERMINATE_ON_NAN_H_

#include <cstdint>
#include <cstdio>
#include <optional>

#include "absl/status/status.h"
#include "train/callbacks/callback.h"

namespace sluice::train::callbacks {

// keras.callbacks.TerminateOnNaN: ends Fit after the first step whose loss (the epoch's running
// mean, as logged) is NaN or infinite, saying "Batch 3: invalid loss, terminating training" on
// `out` (stderr; null: silent). Fit then returns its history as far as it got, as Keras does. It
// reads the loss after every step: a wait for the model's device each step, as in Keras. The loss
// is over all ranks when data-parallel, so every rank stops at the same step.
class TerminateOnNaN : public Callback {
 public:
  // What Fit does at an invalid loss: return its history so far (Keras'), or fail with an error
  // that names the step (sluice train's: a script sees a failure, and no callback after this
  // one in Fit's list saves the step's weights).
  enum class Action { kStop, kFail };

  explicit TerminateOnNaN(std::FILE* out = stderr, Action action = Action::kStop)
      : out_(out), action_(action) {}

  absl::Status OnTrainBegin(const Logs& logs) override;
  absl::Status OnBatchEnd(int64_t batch, const Logs& logs) override;

  // The global step (1-based) whose loss was invalid; nullopt while none was.
  std::optional<int64_t> terminated_at_step() const { return terminated_at_step_; }

 private:
  std::FILE* out_;
  Action action_;
  std::optional<int64_t> terminated_at_step_;
};

}  // namespace sluice::train::callbacks

#endif  // SLUICE_TRAIN_CALLBACKS_TERMINATE_ON_NAN_H_
