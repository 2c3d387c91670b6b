#include "train/losses/loss_from_name.h"

#include "absl/strings/str_cat.h"
#include "train/losses/binary_crossentropy.h"
#include "train/losses/categorical_crossentropy.h"
#include "train/losses/huber.h"
#include "train/losses/mean_absolute_error.h"
#include "train/losses/mean_squared_error.h"
#include "train/losses/sparse_categorical_crossentropy.h"

namespace sluice::train::losses {

absl::StatusOr<std::unique_ptr<Loss>> LossFromName(absl::string_view name) {
  if (name == "sparse_categorical_crossentropy") {
    return std::make_unique<SparseCategoricalCrossentropy>();
  }
  if (name == "categorical_crossentropy") return std::make_unique<CategoricalCrossentropy>();
  if (name == "binary_crossentropy") return std::make_unique<BinaryCrossentropy>();
  if (name == "mse" || name == "mean_squared_error") return std::make_unique<MeanSquaredError>();
  if (name == "mae" || name == "mean_absolute_error") {
    return std::make_unique<MeanAbsoluteError>();
  }
  if (name == "huber" || name == "huber_loss") return std::make_unique<Huber>();
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown loss \"", name,
      "\"; known: sparse_categorical_crossentropy, categorical_crossentropy, binary_crossentropy, "
      "mean_squared_error (mse), mean_absolute_error (mae), huber (huber_loss), or pass a Loss "
      "object (losses::LossFunction wraps any callable)"));
}

}  // namespace sluice::train::losses
