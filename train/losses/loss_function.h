#ifndef SLUICE_TRAIN_LOSSES_LOSS_FUNCTION_H_
#define SLUICE_TRAIN_LOSSES_LOSS_FUNCTION_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/losses/loss.h"

namespace sluice::train::losses {

// A loss computed by any callable, as Keras' compile(loss=fn) (its LossFunctionWrapper).
using LossFn = std::function<absl::StatusOr<Tensor>(const Tensor& y_true, const Tensor& y_pred)>;

// `fn` returns float32 values with y_pred's batch axis first, [N] or [N, ...] (averaged over the
// non-batch axes), built from ops so that the tape records them; the reduction follows.
class LossFunction : public Loss {
 public:
  LossFunction(std::string name, LossFn fn, Reduction reduction = Reduction::kSumOverBatchSize);
  absl::StatusOr<Tensor> PerExample(const Tensor& y_true, const Tensor& y_pred,
                                    ops::LabelRangeCheck* deferred = nullptr) const override;

 private:
  LossFn fn_;
};

}  // namespace sluice::train::losses

#endif  // SLUICE_TRAIN_LOSSES_LOSS_FUNCTION_H_
