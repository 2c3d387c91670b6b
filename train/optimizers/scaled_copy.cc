#include "train/optimizers/scaled_copy.h"

#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::optimizers {

absl::StatusOr<Tensor> ScaledCopy(const Tensor& gradient, float scale, const char* caller) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(caller, {&gradient}));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, gradient.shape()));
  SLUICE_RETURN_IF_ERROR(backend->BroadcastTo(gradient, scale, out));  // same shape: a copy
  return out;
}

}  // namespace sluice::train::optimizers
