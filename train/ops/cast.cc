#include "train/ops/cast.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::ops {
namespace {

bool Castable(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kInt32 || dtype == DType::kInt64;
}

}  // namespace

absl::StatusOr<Tensor> Cast(const Tensor& x, DType dtype) {
  if (!Castable(x.dtype()) || !Castable(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("Cast: from ", DTypeName(x.dtype()), " to ",
                                                   DTypeName(dtype),
                                                   ": only float32, int32 and int64 cast"));
  }
  // The only float-to-float cast is the identity: x itself keeps its gradient.
  if (x.dtype() == dtype) return x;
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Cast", {&x}));
  SLUICE_ASSIGN_OR_RETURN(Tensor y, backend->Allocate(dtype, x.shape()));
  SLUICE_RETURN_IF_ERROR(backend->Cast(x, y));
  return y;
}

}  // namespace sluice::train::ops
