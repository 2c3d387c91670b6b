#ifndef SLUICE_TRAIN_OPS_CROSS_ENTROPY_H_
#define SLUICE_TRAIN_OPS_CROSS_ENTROPY_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// The range check of one call's labels, done on their device: `invalid` counts the labels
// outside [0, classes). Check() copies that one number back and, only when it is not 0, the
// labels too, to say which label is wrong and where.
class LabelRangeCheck {
 public:
  LabelRangeCheck() = default;
  LabelRangeCheck(Tensor invalid, Tensor labels, int64_t classes)
      : invalid_(std::move(invalid)), labels_(std::move(labels)), classes_(classes) {}
  // OK, or InvalidArgument naming the first bad label and its index. OK when empty.
  absl::Status Check() const;
  // The count of bad labels, float32 [1] on the labels' device; null when empty. Summing many
  // checks' counts on the device lets a loop read one number for all of them.
  const Tensor* invalid_count() const { return invalid_ ? &*invalid_ : nullptr; }
  int64_t classes() const { return classes_; }

 private:
  std::optional<Tensor> invalid_;
  Tensor labels_;
  int64_t classes_ = 0;
};

// tf.nn.sparse_softmax_cross_entropy_with_logits: logits float32 [N, C],
// labels int32 or int64 [N] in [0, C), on the logits' device. Returns the
// per-example loss [N], logsumexp(logits[n]) - logits[n, labels[n]]. Labels
// get no gradient.
//
// A label outside [0, C) is an InvalidArgument error. Finding it reads one
// number back from the device, which waits for the device: a training loop
// that must not wait passes `deferred`, and the op then stores the check there
// for the loop to run when it next reads from the device (the loss of a bad
// label is computed with label 0 meanwhile). Inside a traced step (train/function/) without
// `deferred`, the check is recorded to run after every replay's kernels: a host read per call (on
// CUDA it ends a device graph there), and its error gives the count of bad labels, not the first.
absl::StatusOr<Tensor> SparseSoftmaxCrossEntropyWithLogits(const Tensor& logits,
                                                           const Tensor& labels,
                                                           LabelRangeCheck* deferred = nullptr);

// SparseSoftmaxCrossEntropyWithLogits summed over the batch, times `scale`, as a scalar: with
// scale 1 the bits of that op followed by Sum, with 1/N those of Mean (Keras' default loss
// reduction), computed in the same kernel as the per-example losses. Its backward is one kernel
// too (the gradient is not broadcast to [N] first). Labels get no gradient.
absl::StatusOr<Tensor> ReducedSparseSoftmaxCrossEntropyWithLogits(
    const Tensor& logits, const Tensor& labels, float scale, LabelRangeCheck* deferred = nullptr);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_CROSS_ENTROPY_H_
