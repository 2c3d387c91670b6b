#include "train/losses/loss_util.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cast.h"
#include "train/ops/reduce.h"
#include "train/ops/reshape.h"
#include "train/ops/scalar.h"

namespace sluice::train::losses::internal {
namespace {

std::string Describe(const Tensor& t) {
  return absl::StrCat(DTypeName(t.dtype()), t.shape().DebugString());
}

// Whether `longer` is `shorter` with one more axis of size 1 at the end.
bool OneMoreUnitAxis(const Shape& longer, const Shape& shorter) {
  if (longer.rank() != shorter.rank() + 1 || longer.dim(longer.rank() - 1) != 1) return false;
  for (int d = 0; d < shorter.rank(); ++d) {
    if (longer.dim(d) != shorter.dim(d)) return false;
  }
  return true;
}

}  // namespace

absl::Status LabelError(absl::string_view loss, absl::string_view what, const Tensor& y_true,
                        const Tensor& y_pred) {
  return absl::InvalidArgumentError(absl::StrCat(
      loss, ": ", what, ", got y_true ", Describe(y_true), " and y_pred ", Describe(y_pred)));
}

absl::Status CheckSeveralClasses(absl::string_view loss, const Tensor& y_true,
                                 const Tensor& y_pred) {
  const int64_t classes = y_pred.dim(y_pred.rank() - 1);
  if (classes == 0) {
    // Every label would be out of range; the batch's rows would have no scores to normalise.
    return LabelError(loss, "y_pred has no classes (its last dimension is 0)", y_true, y_pred);
  }
  if (classes != 1) return absl::OkStatus();
  return LabelError(loss,
                    "y_pred has one unit per example, and a softmax over one class is always 1 "
                    "(the loss would always be 0 and not depend on the model). For two classes "
                    "with one output unit use BinaryCrossentropy; for C classes give the model C "
                    "output units",
                    y_true, y_pred);
}

absl::Status CheckPredictions(absl::string_view loss, const Tensor& y_pred, const Tensor& y_true,
                              int min_rank) {
  if (y_pred.dtype() != DType::kFloat32 || y_pred.rank() < min_rank) {
    return LabelError(loss,
                      min_rank >= 2 ? "y_pred must be float32 [N, ..., C] (a batch of class scores)"
                                    : "y_pred must be float32 [N, ...] (a batch)",
                      y_true, y_pred);
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DenseLabels(absl::string_view loss, const Tensor& y_true,
                                   const Tensor& y_pred) {
  if (y_true.dtype() != DType::kFloat32 && y_true.dtype() != DType::kInt32 &&
      y_true.dtype() != DType::kInt64) {
    return LabelError(loss, "y_true must be float32, int32 or int64", y_true, y_pred);
  }
  const bool same = y_true.shape() == y_pred.shape();
  if (!same && !OneMoreUnitAxis(y_pred.shape(), y_true.shape()) &&
      !OneMoreUnitAxis(y_true.shape(), y_pred.shape())) {
    return LabelError(
        loss, "y_true must have y_pred's shape, or one axis of size 1 more or less at the end",
        y_true, y_pred);
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor labels, ops::Cast(y_true, DType::kFloat32));
  if (same) return labels;
  std::vector<int64_t> dims(y_pred.shape().dims().begin(), y_pred.shape().dims().end());
  return ops::Reshape(labels, std::move(dims));
}

absl::Status CheckLabelSmoothing(absl::string_view loss, float label_smoothing) {
  if (label_smoothing >= 0 && label_smoothing <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(loss, ": label_smoothing must be in [0, 1], got ", label_smoothing));
}

absl::StatusOr<Tensor> Clip(const Tensor& x, float lo, float hi) {
  SLUICE_ASSIGN_OR_RETURN(Tensor low, ops::ScalarLike(lo, x));
  SLUICE_ASSIGN_OR_RETURN(Tensor high, ops::ScalarLike(hi, x));
  SLUICE_ASSIGN_OR_RETURN(Tensor above, ops::Maximum(x, low));
  return ops::Minimum(above, high);
}

// z - log(sum(exp(z))), z = x - max(x). The max only keeps exp in range: the result does not
// depend on it, so no gradient needs to flow through it.
absl::StatusOr<Tensor> LogSoftmax(const Tensor& x) {
  SLUICE_ASSIGN_OR_RETURN(Tensor max, ops::Max(x, {-1}, /*keepdims=*/true));
  SLUICE_ASSIGN_OR_RETURN(max, autodiff::StopGradient(max));
  SLUICE_ASSIGN_OR_RETURN(Tensor z, ops::Sub(x, max));
  SLUICE_ASSIGN_OR_RETURN(Tensor e, ops::Exp(z));
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(e, {-1}, /*keepdims=*/true));
  SLUICE_ASSIGN_OR_RETURN(Tensor log_sum, ops::Log(sum));
  return ops::Sub(z, log_sum);
}

absl::StatusOr<Tensor> MeanOverNonBatch(const Tensor& x) {
  if (x.rank() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a loss needs a batch axis, got a value of shape ", x.shape().DebugString()));
  }
  if (x.rank() == 1) return x;
  std::vector<int> axes;
  for (int d = 1; d < x.rank(); ++d) axes.push_back(d);
  return ops::Mean(x, std::move(axes));
}

}  // namespace sluice::train::losses::internal
