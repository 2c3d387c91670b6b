#ifndef SLUICE_TRAIN_LOSSES_MEAN_SQUARED_ERROR_H_
#define SLUICE_TRAIN_LOSSES_MEAN_SQUARED_ERROR_H_

#include <string>

#include "train/losses/loss.h"

namespace sluice::train::losses {

struct MeanSquaredErrorOptions {
  Reduction reduction = Reduction::kSumOverBatchSize;
  std::string name = "mean_squared_error";
};

// keras.losses.MeanSquaredError: mean((y_pred - y_true)^2) per example. y_true float32, int32 or
// int64 (cast), of y_pred's shape or with one unit axis more or less at the end.
class MeanSquaredError : public Loss {
 public:
  explicit MeanSquaredError(MeanSquaredErrorOptions options = {});
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_MEAN_SQUARED_ERROR_H_
