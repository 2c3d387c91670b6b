#include "train/ops/add_relu.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> AddRelu(const Tensor& a, const Tensor& b, bool keep_compute_dtype) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("AddRelu", {&a, &b}));
  for (const Tensor* t : {&a, &b}) {
    if (t->dtype() != DType::kBFloat16 || !backend->ReadsBFloat16Operands()) {
      SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(*t, "AddRelu", "operand"));
    }
  }
  if (a.shape() != b.shape()) {
    return absl::InvalidArgumentError(absl::StrCat("AddRelu: want operands of one shape, got ",
                                                   a.shape().DebugString(), " and ",
                                                   b.shape().DebugString()));
  }
  const DType type =
      keep_compute_dtype && backend->ReadsBFloat16Operands() ? DType::kBFloat16 : DType::kFloat32;
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(type, a.shape()));
  if (out.num_elements() == 0) return out;
  SLUICE_RETURN_IF_ERROR(backend->AddRelu(a, b, out));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics("AddRelu", out));
  if (autodiff::ShouldRecord({a, b})) {
    autodiff::RecordOperation(
        {a, b}, out,
        [backend, out, a_type = a.dtype(), b_type = b.dtype()](
            const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor ga, backend->Allocate(a_type, out.shape()));
          SLUICE_ASSIGN_OR_RETURN(Tensor gb, backend->Allocate(b_type, out.shape()));
          SLUICE_RETURN_IF_ERROR(backend->AddReluBackward(out, g, ga, gb));
          return std::vector<std::optional<Tensor>>{ga, gb};
        });
  }
  return out;
}

}  // namespace sluice::train::ops
