#include "train/softmax.h"

#include "core/status_macros.h"
#include "train/backend.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> Softmax(const Tensor& logits) {
  RETURN_IF_ERROR(RequireFloat32(logits, "Softmax", "logits"));
  if (logits.rank() < 1) return absl::InvalidArgumentError("Softmax: logits must have rank >= 1");
  ASSIGN_OR_RETURN(Backend * backend, BackendFor("Softmax", {&logits}));
  ASSIGN_OR_RETURN(Tensor y, backend->Allocate(DType::kFloat32, logits.shape()));
  RETURN_IF_ERROR(backend->Softmax(logits, y));
  if (ShouldRecord({logits})) {
    RecordOperation(
        {logits}, y,
        [backend, y](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, y.shape()));
          RETURN_IF_ERROR(backend->SoftmaxBackward(y, g, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return y;
}

}  // namespace sluice::train
