#include "train/optimizers/sum_of_squares.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/sum_all.h"

namespace sluice::train::optimizers {

absl::StatusOr<std::optional<Tensor>> SumOfSquares(const std::vector<std::optional<Tensor>>& grads,
                                                   const char* caller) {
  std::optional<Tensor> total;
  for (const std::optional<Tensor>& g : grads) {
    if (!g) continue;
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(caller, {&*g}));
    SLUICE_ASSIGN_OR_RETURN(Tensor squares, backend->Allocate(DType::kFloat32, g->shape()));
    SLUICE_RETURN_IF_ERROR(backend->Binary(backend::BinaryOp::kMul, *g, *g, squares));
    SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend::SumAll(squares));
    if (!total) {
      total = std::move(sum);
      continue;
    }
    if (!(total->device() == g->device())) {
      return absl::InvalidArgumentError(absl::StrCat(caller, ": gradients on ",
                                                     total->device().DebugString(), " and ",
                                                     g->device().DebugString()));
    }
    SLUICE_RETURN_IF_ERROR(backend->Axpby(1.0f, sum, 1.0f, *total));
  }
  return total;
}

}  // namespace sluice::train::optimizers
