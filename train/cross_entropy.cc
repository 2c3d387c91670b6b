#include "train/cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> SparseSoftmaxCrossEntropyWithLogits(const Tensor& logits,
                                                           const Tensor& labels) {
  constexpr char kOp[] = "SparseSoftmaxCrossEntropyWithLogits";
  RETURN_IF_ERROR(RequireFloat32(logits, kOp, "logits"));
  if (logits.rank() != 2 || labels.rank() != 1 || labels.dim(0) != logits.dim(0)) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": want logits [N, C] and labels [N], got ",
                                                   logits.shape().DebugString(), " and ",
                                                   labels.shape().DebugString()));
  }
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": labels must be int32 or int64, got ", DTypeName(labels.dtype())));
  }
  const int64_t n = logits.dim(0), c = logits.dim(1);
  std::vector<int64_t> label(n);
  for (int64_t i = 0; i < n; ++i) {
    label[i] =
        labels.dtype() == DType::kInt32 ? labels.data<int32_t>()[i] : labels.data<int64_t>()[i];
    if (label[i] < 0 || label[i] >= c) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOp, ": label ", label[i], " at index ", i, " is outside [0, ", c, ")"));
    }
  }
  Tensor loss(DType::kFloat32, Shape{n});
  Tensor probs(DType::kFloat32, logits.shape());  // kept for the backward
  for (int64_t i = 0; i < n; ++i) {
    const float* x = logits.data<float>() + i * c;
    float* p = probs.data<float>() + i * c;
    const float m = c > 0 ? *std::max_element(x, x + c) : 0.0f;
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(x[j] - m));
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < c; ++j) p[j] = static_cast<float>(std::exp(x[j] - m - log_sum));
    loss.data<float>()[i] = static_cast<float>(m + log_sum - x[label[i]]);
  }
  if (ShouldRecord({logits})) {
    RecordOperation({logits, labels}, loss,
                    [probs, label, n,
                     c](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      // d loss_n / d logits_n = softmax - one_hot(label).
                      Tensor gx(DType::kFloat32, probs.shape());
                      for (int64_t i = 0; i < n; ++i) {
                        const float* p = probs.data<float>() + i * c;
                        float* o = gx.data<float>() + i * c;
                        const float d = g.data<float>()[i];
                        for (int64_t j = 0; j < c; ++j)
                          o[j] = d * (p[j] - (j == label[i] ? 1.0f : 0.0f));
                      }
                      return std::vector<std::optional<Tensor>>{gx, std::nullopt};
                    });
  }
  return loss;
}

}  // namespace sluice::train
