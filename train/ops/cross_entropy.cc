#include "train/ops/cross_entropy.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> SparseSoftmaxCrossEntropyWithLogits(const Tensor& logits,
                                                           const Tensor& labels) {
  constexpr char kOp[] = "SparseSoftmaxCrossEntropyWithLogits";
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(logits, kOp, "logits"));
  if (logits.rank() != 2 || labels.rank() != 1 || labels.dim(0) != logits.dim(0)) {
    return absl::InvalidArgumentError(absl::StrCat(kOp, ": want logits [N, C] and labels [N], got ",
                                                   logits.shape().DebugString(), " and ",
                                                   labels.shape().DebugString()));
  }
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": labels must be int32 or int64, got ", DTypeName(labels.dtype())));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(kOp, {&logits, &labels}));
  const int64_t n = logits.dim(0), c = logits.dim(1);
  // Labels are few (one per example): checked on the host, handed to the
  // backend as int64.
  Tensor host_labels = labels.device().is_cpu() ? labels : Tensor(labels.dtype(), labels.shape());
  if (!labels.device().is_cpu()) SLUICE_RETURN_IF_ERROR(backend->Copy(labels, host_labels));
  Tensor label64(DType::kInt64, Shape{n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = labels.dtype() == DType::kInt32 ? host_labels.data<int32_t>()[i]
                                                      : host_labels.data<int64_t>()[i];
    if (l < 0 || l >= c) {
      return absl::InvalidArgumentError(
          absl::StrCat(kOp, ": label ", l, " at index ", i, " is outside [0, ", c, ")"));
    }
    label64.data<int64_t>()[i] = l;
  }
  Tensor device_labels = label64;
  if (!logits.device().is_cpu()) {
    SLUICE_ASSIGN_OR_RETURN(device_labels, backend->Allocate(DType::kInt64, Shape{n}));
    SLUICE_RETURN_IF_ERROR(backend->Copy(label64, device_labels));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, backend->Allocate(DType::kFloat32, Shape{n}));
  SLUICE_ASSIGN_OR_RETURN(Tensor probs, backend->Allocate(DType::kFloat32, logits.shape()));
  SLUICE_RETURN_IF_ERROR(backend->SparseSoftmaxCrossEntropy(logits, device_labels, loss, probs));
  if (autodiff::ShouldRecord({logits})) {
    autodiff::RecordOperation(
        {logits, labels}, loss,
        [backend, probs,
         device_labels](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, probs.shape()));
          SLUICE_RETURN_IF_ERROR(
              backend->SparseSoftmaxCrossEntropyBackward(probs, device_labels, g, gx));
          return std::vector<std::optional<Tensor>>{gx, std::nullopt};
        });
  }
  return loss;
}

}  // namespace sluice::train::ops
