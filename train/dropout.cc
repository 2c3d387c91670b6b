#include "train/dropout.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> Dropout(const Tensor& x, DropoutOptions options) {
  RETURN_IF_ERROR(RequireFloat32(x, "Dropout", "x"));
  if (!(options.rate >= 0.0f && options.rate < 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Dropout: rate must be in [0, 1), got ", options.rate));
  }
  ASSIGN_OR_RETURN(Backend * backend, BackendFor("Dropout", {&x}));
  ASSIGN_OR_RETURN(Tensor mask, backend->Allocate(DType::kFloat32, x.shape()));
  ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, x.shape()));
  RETURN_IF_ERROR(backend->Dropout(x, options.rate, options.seed, mask, out));
  if (ShouldRecord({x})) {
    RecordOperation(
        {x}, out,
        [backend, mask](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, g.shape()));
          RETURN_IF_ERROR(backend->Binary(BinaryOp::kMul, g, mask, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return out;
}

}  // namespace sluice::train
