#include "train/ops/cross_entropy.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {

absl::Status LabelRangeCheck::Check() const {
  if (!invalid_) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(float invalid, backend::ReadScalar(*invalid_));
  if (invalid == 0) return absl::OkStatus();
  if (!labels_.buffer()) {
    // A traced step's check (below): the labels of a replay are not at hand.
    return absl::InvalidArgumentError(absl::StrCat(
        "SparseSoftmaxCrossEntropyWithLogits: ", static_cast<int64_t>(invalid),
        " labels of this batch are outside [0, ", classes_, "): the model's output has ", classes_,
        " classes; does its last Dense have as many units as the data has classes? (Run "
        "eagerly to name the first.)"));
  }
  // The error path alone copies the labels back, to name the first bad one.
  SLUICE_ASSIGN_OR_RETURN(Tensor host, backend::ToHost(labels_));
  for (int64_t i = 0; i < host.num_elements(); ++i) {
    const int64_t l =
        host.dtype() == DType::kInt32 ? host.data<int32_t>()[i] : host.data<int64_t>()[i];
    if (l < 0 || l >= classes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("SparseSoftmaxCrossEntropyWithLogits: label ", l, " at index ", i,
                       " is outside [0, ", classes_, "): the model's output has ", classes_,
                       " classes; does its last Dense have as many "
                       "units as the data has classes?"));
    }
  }
  return absl::InternalError(absl::StrCat("SparseSoftmaxCrossEntropyWithLogits: the device found ",
                                          invalid, " labels outside [0, ", classes_,
                                          ") but the host finds none"));
}

namespace {

constexpr char kOp[] = "SparseSoftmaxCrossEntropyWithLogits";

// Both forms of the op: the per-example loss [N] (scale 1), or (`reduced`) their sum times `scale`
// as a scalar, computed in the same backend call.
absl::StatusOr<Tensor> SparseCrossEntropy(const Tensor& logits_in, const Tensor& labels,
                                          LabelRangeCheck* deferred, bool reduced, float scale) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor logits, AutoCast(logits_in));
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
  // Labels are cast and range-checked on their device; only the count of bad ones comes back.
  SLUICE_ASSIGN_OR_RETURN(Tensor device_labels, backend->Allocate(DType::kInt64, Shape{n}));
  SLUICE_ASSIGN_OR_RETURN(Tensor invalid, backend->Allocate(DType::kFloat32, Shape{1}));
  SLUICE_RETURN_IF_ERROR(backend->CastLabels(labels, c, device_labels, invalid));
  LabelRangeCheck check(std::move(invalid), labels, c);
  if (deferred != nullptr) {
    *deferred = std::move(check);
  } else if (backend::Tracing()) {
    // A replay must check its own batch: the count is read back after each replay's kernels.
    SLUICE_RETURN_IF_ERROR(backend::CheckAtEveryReplay(
        kOp, *check.invalid_count(),
        [c](const Tensor& count) { return LabelRangeCheck(count, Tensor(), c).Check(); }));
  } else {
    SLUICE_RETURN_IF_ERROR(check.Check());
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor per_example, backend->Allocate(DType::kFloat32, Shape{n}));
  SLUICE_ASSIGN_OR_RETURN(Tensor probs, backend->Allocate(DType::kFloat32, logits.shape()));
  Tensor loss = per_example;
  if (reduced) {
    SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend->Allocate(DType::kFloat32, Shape{1}));
    SLUICE_RETURN_IF_ERROR(
        backend->SparseSoftmaxCrossEntropy(logits, device_labels, per_example, probs, scale, &sum));
    SLUICE_ASSIGN_OR_RETURN(loss, sum.Reshape(Shape{}));
  } else {
    SLUICE_RETURN_IF_ERROR(backend->SparseSoftmaxCrossEntropy(logits, device_labels, per_example,
                                                              probs, scale, nullptr));
  }
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(kOp, loss));
  if (autodiff::ShouldRecord({logits})) {
    // The reduced loss's gradient (one number) reaches every row inside the backward kernel,
    // scaled there; the per-example form has scale 1.
    autodiff::RecordOperation(
        {logits, labels}, loss,
        [backend, probs, device_labels,
         scale](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, probs.shape()));
          SLUICE_RETURN_IF_ERROR(
              backend->SparseSoftmaxCrossEntropyBackward(probs, device_labels, g, scale, gx));
          return std::vector<std::optional<Tensor>>{gx, std::nullopt};
        });
  }
  return loss;
}

}  // namespace

absl::StatusOr<Tensor> SparseSoftmaxCrossEntropyWithLogits(const Tensor& logits,
                                                           const Tensor& labels,
                                                           LabelRangeCheck* deferred) {
  return SparseCrossEntropy(logits, labels, deferred, /*reduced=*/false, 1.0f);
}

absl::StatusOr<Tensor> ReducedSparseSoftmaxCrossEntropyWithLogits(const Tensor& logits,
                                                                  const Tensor& labels, float scale,
                                                                  LabelRangeCheck* deferred) {
  return SparseCrossEntropy(logits, labels, deferred, /*reduced=*/true, scale);
}

}  // namespace sluice::train::ops
