#include "train/ops/scalar.h"

#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> ScalarLike(float value, const Tensor& like) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(like.device()));
  SLUICE_ASSIGN_OR_RETURN(Tensor c, backend->Allocate(DType::kFloat32, Shape()));
  SLUICE_RETURN_IF_ERROR(backend->Fill(c, value));
  return c;
}

absl::StatusOr<Tensor> Scale(const Tensor& x, float value) {
  SLUICE_ASSIGN_OR_RETURN(Tensor c, ScalarLike(value, x));
  return Mul(x, c);
}

absl::StatusOr<Tensor> AddScalar(const Tensor& x, float value) {
  SLUICE_ASSIGN_OR_RETURN(Tensor c, ScalarLike(value, x));
  return Add(x, c);
}

}  // namespace sluice::train::ops
