#include "train/ops/reshape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> Reshape(const Tensor& x_in, std::vector<int64_t> shape) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, "Reshape", "x"));
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Reshape: bad target shape [", absl::StrJoin(shape, ", "), "]"));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0 && known > 0 && x.num_elements() % known == 0) {
    shape[infer] = x.num_elements() / known;
  }
  Shape target(shape);
  if (target.num_elements() != x.num_elements() || (infer >= 0 && shape[infer] < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Reshape: cannot reshape ", x.shape().DebugString(), " (", x.num_elements(),
                     " values) to [", absl::StrJoin(shape, ", "), "]"));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Reshape", {&x}));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, target));
  SLUICE_RETURN_IF_ERROR(backend->Copy(x, out));
  if (autodiff::ShouldRecord({x})) {
    const Shape in_shape = x.shape();
    autodiff::RecordOperation(
        {x}, out,
        [backend, in_shape](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, in_shape));
          SLUICE_RETURN_IF_ERROR(backend->Copy(g, gx));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return out;
}

absl::StatusOr<Tensor> Flatten(const Tensor& x) {
  if (x.rank() < 1) return absl::InvalidArgumentError("Flatten: x must have rank >= 1");
  return Reshape(x, {x.dim(0), x.dim(0) == 0 ? 0 : x.num_elements() / x.dim(0)});
}

}  // namespace sluice::train::ops
