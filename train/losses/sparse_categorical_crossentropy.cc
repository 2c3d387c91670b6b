#include "train/losses/sparse_categorical_crossentropy.h"

#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/losses/loss_util.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/reduce.h"
#include "train/ops/reshape.h"
#include "train/ops/scalar.h"

namespace sluice::train::losses {

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(
    SparseCategoricalCrossentropyOptions options)
    : Loss(std::move(options.name), options.reduction),
      from_logits_(options.from_logits),
      label_smoothing_(options.label_smoothing) {}

absl::StatusOr<SparseCategoricalCrossentropy::Rows> SparseCategoricalCrossentropy::ToRows(
    const Tensor& y_true, const Tensor& y_pred) const {
  SLUICE_RETURN_IF_ERROR(internal::CheckPredictions(name(), y_pred, y_true, 2));
  const int64_t classes = y_pred.dim(y_pred.rank() - 1);
  SLUICE_RETURN_IF_ERROR(internal::CheckSeveralClasses(name(), y_true, y_pred));
  if (y_true.dtype() != DType::kInt32 && y_true.dtype() != DType::kInt64) {
    return internal::LabelError(name(),
                                "y_true must be int32 or int64 class indices (one-hot or other "
                                "float labels take CategoricalCrossentropy)",
                                y_true, y_pred);
  }
  // The labels index y_pred's rows: y_pred's shape without its class axis, or with 1 there.
  Shape rows_shape;
  for (int d = 0; d + 1 < y_pred.rank(); ++d) rows_shape.AddDim(y_pred.dim(d));
  Shape with_unit = rows_shape;
  with_unit.AddDim(1);
  if (y_true.shape() != rows_shape && y_true.shape() != with_unit) {
    return internal::LabelError(
        name(),
        absl::StrCat("y_true must be class indices of shape ", rows_shape.DebugString(), " or ",
                     with_unit.DebugString(), " for y_pred ", y_pred.shape().DebugString()),
        y_true, y_pred);
  }
  SLUICE_RETURN_IF_ERROR(internal::CheckLabelSmoothing(name(), label_smoothing_));
  const int64_t rows = rows_shape.num_elements();
  SLUICE_ASSIGN_OR_RETURN(Tensor labels, y_true.Reshape(Shape{rows}));
  Tensor logits = y_pred;
  if (y_pred.rank() > 2) {
    SLUICE_ASSIGN_OR_RETURN(logits, ops::Reshape(y_pred, {rows, classes}));
  }
  if (!from_logits_) {
    // Keras: log(clip(p)) as logits, whose softmax normalises the clipped probabilities.
    SLUICE_ASSIGN_OR_RETURN(Tensor clipped,
                            internal::Clip(logits, internal::kEpsilon, 1.0f - internal::kEpsilon));
    SLUICE_ASSIGN_OR_RETURN(logits, ops::Log(clipped));
  }
  return Rows{.labels = std::move(labels), .logits = std::move(logits)};
}

absl::StatusOr<std::optional<Tensor>> SparseCategoricalCrossentropy::FusedReduced(
    const Tensor& y_true, const Tensor& y_pred, ops::LabelRangeCheck* deferred) const {
  // A subclass may override PerExample, which the fused form would skip.
  if (typeid(*this) != typeid(SparseCategoricalCrossentropy)) return std::nullopt;
  const int64_t n = y_pred.rank() == 2 ? y_pred.dim(0) : 0;
  if (label_smoothing_ != 0 || n == 0) return std::nullopt;
  SLUICE_ASSIGN_OR_RETURN(Rows rows, ToRows(y_true, y_pred));
  // Mean's scale, so that the loss has its bits.
  const float scale =
      reduction() == Reduction::kSumOverBatchSize ? 1.0f / static_cast<float>(n) : 1.0f;
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::ReducedSparseSoftmaxCrossEntropyWithLogits(
                                           rows.logits, rows.labels, scale, deferred));
  return loss;
}

absl::StatusOr<Tensor> SparseCategoricalCrossentropy::PerExample(
    const Tensor& y_true, const Tensor& y_pred, ops::LabelRangeCheck* deferred) const {
  SLUICE_ASSIGN_OR_RETURN(Rows rows, ToRows(y_true, y_pred));
  const Tensor& logits = rows.logits;
  SLUICE_ASSIGN_OR_RETURN(Tensor loss,
                          ops::SparseSoftmaxCrossEntropyWithLogits(logits, rows.labels, deferred));
  if (label_smoothing_ > 0) {
    // -sum(target * log p) with target = (1 - e) onehot(y) + e / C splits into the sparse loss
    // and the mean of -log p over the classes: no one-hot tensor is made.
    SLUICE_ASSIGN_OR_RETURN(Tensor log_p, internal::LogSoftmax(logits));
    SLUICE_ASSIGN_OR_RETURN(Tensor mean_log_p, ops::Mean(log_p, {-1}));
    SLUICE_ASSIGN_OR_RETURN(loss, ops::Scale(loss, 1.0f - label_smoothing_));
    SLUICE_ASSIGN_OR_RETURN(mean_log_p, ops::Scale(mean_log_p, label_smoothing_));
    SLUICE_ASSIGN_OR_RETURN(loss, ops::Sub(loss, mean_log_p));
  }
  if (y_pred.rank() == 2) return loss;
  std::vector<int64_t> dims(y_pred.shape().dims().begin(), y_pred.shape().dims().end() - 1);
  SLUICE_ASSIGN_OR_RETURN(Tensor per_row, ops::Reshape(loss, std::move(dims)));
  return internal::MeanOverNonBatch(per_row);
}

}  // namespace sluice::train::losses
