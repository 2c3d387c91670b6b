#ifndef SLUICE_TRAIN_LOSSES_MEAN_ABSOLUTE_ERROR_H_
#define SLUICE_TRAIN_LOSSES_MEAN_ABSOLUTE_ERROR_H_

#include <string>

#include "train/losses/loss.h"

namespace sluice::train::losses {

struct MeanAbsoluteErrorOptions {
  Reduction reduction = Reduction::kSumOverBatchSize;
  std::string name = "mean_absolute_error";
};

// keras.losses.MeanAbsoluteError: mean(|y_pred - y_true|) per example (the gradient is 0 where they
// are equal). y_true float32, int32 or int64 (cast), of y_pred's shape or with one unit axis more
// or less at the end.
class MeanAbsoluteError : public Loss {
 public:
  explicit MeanAbsoluteError(MeanAbsoluteErrorOptions options = {});
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_MEAN_ABSOLUTE_ERROR_H_
