#include "train/losses/loss.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/ops/reduce.h"

namespace sluice::train::losses {

Loss::Loss(std::string name, Reduction reduction) : name_(std::move(name)), reduction_(reduction) {}

absl::StatusOr<Tensor> Loss::Reduce(const Tensor& per_example) const {
  if (per_example.dtype() != DType::kFloat32 || per_example.rank() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": per-example losses must be float32 [N], got ",
                     DTypeName(per_example.dtype()), per_example.shape().DebugString()));
  }
  switch (reduction_) {
    case Reduction::kSumOverBatchSize:
      // Keras' divide_no_nan: an empty batch's loss is 0, not Mean's 0 / 0.
      return per_example.dim(0) == 0 ? ops::Sum(per_example) : ops::Mean(per_example);
    case Reduction::kSum:
      return ops::Sum(per_example);
    case Reduction::kNone:
      break;
  }
  return per_example;
}

absl::StatusOr<Tensor> Loss::operator()(const Tensor& y_true, const Tensor& y_pred,
                                        ops::LabelRangeCheck* deferred) const {
  if (reduction_ != Reduction::kNone) {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> fused, FusedReduced(y_true, y_pred, deferred));
    if (fused) return *std::move(fused);
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor per_example, PerExample(y_true, y_pred, deferred));
  return Reduce(per_example);
}

}  // namespace sluice::train::losses
