#include "train/ops/dropout.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> Dropout(const Tensor& x_in, DropoutOptions options) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, "Dropout", "x"));
  if (!(options.rate >= 0.0f && options.rate < 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Dropout: rate must be in [0, 1), got ", options.rate));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Dropout", {&x}));
  SLUICE_ASSIGN_OR_RETURN(Tensor mask, backend->Allocate(DType::kFloat32, x.shape()));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, x.shape()));
  SLUICE_RETURN_IF_ERROR(backend->Dropout(x, options.rate, options.seed, mask, out));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("Dropout", out));
  if (autodiff::ShouldRecord({x})) {
    autodiff::RecordOperation(
        {x}, out,
        [backend, mask](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, g.shape()));
          SLUICE_RETURN_IF_ERROR(backend->Binary(backend::BinaryOp::kMul, g, mask, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return out;
}

}  // namespace sluice::train::ops
