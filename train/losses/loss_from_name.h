#ifndef SLUICE_TRAIN_LOSSES_LOSS_FROM_NAME_H_
#define SLUICE_TRAIN_LOSSES_LOSS_FROM_NAME_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/losses/loss.h"

namespace sluice::train::losses {

// The loss Keras' compile(loss="...") names, with Keras' defaults (from_logits = false, the
// reduction kSumOverBatchSize): "sparse_categorical_crossentropy", "categorical_crossentropy",
// "binary_crossentropy", "mean_squared_error" (or "mse"), "mean_absolute_error" (or "mae"),
// "huber" (or "huber_loss"). The loss's name() is its Keras name ("mse" gives
// "mean_squared_error"). Any other name is InvalidArgument listing these.
absl::StatusOr<std::unique_ptr<Loss>> LossFromName(absl::string_view name);

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_LOSS_FROM_NAME_H_
