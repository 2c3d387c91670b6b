#ifndef SLUICE_TRAIN_LOSSES_LOSS_UTIL_H_
#define SLUICE_TRAIN_LOSSES_LOSS_UTIL_H_

// Pieces the losses share: label shapes and dtypes, constants on the device, the mean over the
// non-batch axes. Each is built from ops, so that the tape records it.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace sluice::train::losses::internal {

// InvalidArgument "<loss>: <what>, got y_true <dtype>[shape] and y_pred <dtype>[shape]".
absl::Status LabelError(absl::string_view loss, absl::string_view what, const Tensor& y_true,
                        const Tensor& y_pred);

// InvalidArgument when y_pred's last axis has no class, or one: a softmax over one is always 1,
// so the loss would not depend on the model (the cross-entropies over classes share this check).
absl::Status CheckSeveralClasses(absl::string_view loss, const Tensor& y_true,
                                 const Tensor& y_pred);

// OK when y_pred is float32 of rank >= min_rank (its first axis the batch).
absl::Status CheckPredictions(absl::string_view loss, const Tensor& y_pred, const Tensor& y_true,
                              int min_rank);

// y_true as float32 in y_pred's shape. Accepts float32, int32 or int64 (cast) in y_pred's shape,
// or with one axis of size 1 more or less at the end (Keras' squeeze_or_expand_to_same_rank:
// labels [N] for predictions [N, 1], and the other way round).
absl::StatusOr<Tensor> DenseLabels(absl::string_view loss, const Tensor& y_true,
                                   const Tensor& y_pred);

// InvalidArgument "<loss>: label_smoothing must be in [0, 1], got <value>" unless it is (NaN
// included): the smoothing losses share this check.
absl::Status CheckLabelSmoothing(absl::string_view loss, float label_smoothing);

// tf.clip_by_value: Minimum(Maximum(x, lo), hi), the gradient passing at the bounds.
absl::StatusOr<Tensor> Clip(const Tensor& x, float lo, float hi);

// log_softmax over the last axis, stable for large logits.
absl::StatusOr<Tensor> LogSoftmax(const Tensor& x);

// [N, ...] averaged over every axis but the first: [N]. A rank-1 x is returned as is.
absl::StatusOr<Tensor> MeanOverNonBatch(const Tensor& x);

// Keras' backend.epsilon(), which the losses on probabilities clip with.
inline constexpr float kEpsilon = 1e-7f;

}  // namespace sluice::train::losses::internal

#endif  // SLUICE_TRAIN_LOSSES_LOSS_UTIL_H_
