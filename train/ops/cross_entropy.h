#ifndef SLUICE_TRAIN_OPS_CROSS_ENTROPY_H_
#define SLUICE_TRAIN_OPS_CROSS_ENTROPY_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::ops {

// tf.nn.sparse_softmax_cross_entropy_with_logits: logits float32 [N, C],
// labels int32 or int64 [N] in [0, C). Returns the per-example loss [N],
// logsumexp(logits[n]) - logits[n, labels[n]]. Labels get no gradient.
absl::StatusOr<Tensor> SparseSoftmaxCrossEntropyWithLogits(const Tensor& logits,
                                                           const Tensor& labels);

}  // namespace sluice::train::ops

#endif  // SLUICE_TRAIN_OPS_CROSS_ENTROPY_H_
