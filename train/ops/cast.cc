#include "train/ops/cast.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"

namespace sluice::train::ops {
namespace {

bool Castable(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kInt32 || dtype == DType::kInt64 ||
         dtype == DType::kBFloat16;
}

bool IsFloat(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kBFloat16; }

}  // namespace

absl::StatusOr<Tensor> Cast(const Tensor& x, DType dtype) {
  if (!Castable(x.dtype()) || !Castable(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("Cast: from ", DTypeName(x.dtype()), " to ",
                                                   DTypeName(dtype),
                                                   ": only float32, bfloat16, int32 and int64 "
                                                   "cast"));
  }
  if (x.dtype() == dtype) return x;  // x itself keeps its gradient
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Cast", {&x}));
  const bool bf16 = x.dtype() == DType::kBFloat16 || dtype == DType::kBFloat16;
  // A bfloat16 tensor exists only on a backend that made it, which casts it back at any time.
  if (bf16 && (!IsFloat(x.dtype()) || !IsFloat(dtype) ||
               (dtype == DType::kBFloat16 && !backend->ReadsBFloat16Operands()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Cast: bfloat16 casts to and from float32 only, and to it on a backend that reads "
        "bfloat16 operands (the CPU under mixed_bfloat16); asked ",
        DTypeName(x.dtype()), " to ", DTypeName(dtype), " on ", backend->device().DebugString()));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor y, backend->Allocate(dtype, x.shape()));
  SLUICE_RETURN_IF_ERROR(backend->Cast(x, y));
  if (bf16 && autodiff::ShouldRecord({x})) {
    // Between float types the gradient is the output's, cast back to the input's type.
    autodiff::RecordOperation(
        {x}, y,
        [backend,
         from = x.dtype()](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          if (g.dtype() == from) return std::vector<std::optional<Tensor>>{g};
          SLUICE_ASSIGN_OR_RETURN(Tensor back, backend->Allocate(from, g.shape()));
          SLUICE_RETURN_IF_ERROR(backend->Cast(g, back));
          return std::vector<std::optional<Tensor>>{back};
        });
  }
  return y;
}

}  // namespace sluice::train::ops
