#include "train/backend/sum_all.h"

#include <vector>

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::backend {

absl::StatusOr<Tensor> SumAll(const Tensor& x) {
  SLUICE_ASSIGN_OR_RETURN(Backend * backend, BackendFor("SumAll", {&x}));
  Shape kept;
  for (int d = 0; d < x.rank(); ++d) kept.AddDim(1);
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend->Allocate(DType::kFloat32, kept));
  if (x.num_elements() == 0) {
    SLUICE_RETURN_IF_ERROR(backend->Fill(sum, 0));
  } else {
    SLUICE_RETURN_IF_ERROR(
        backend->Reduce(ReduceOp::kSum, x, std::vector<bool>(x.rank(), true), 1.0f, sum));
  }
  return sum.Reshape(Shape{1});
}

}  // namespace sluice::train::backend
