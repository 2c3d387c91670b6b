#include "train/ops/concat.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> Concat(const std::vector<Tensor>& xs_in, int axis) {
  if (xs_in.empty()) return absl::InvalidArgumentError("Concat: no tensors");
  std::vector<Tensor> xs;
  xs.reserve(xs_in.size());
  for (const Tensor& x : xs_in) {
    SLUICE_ASSIGN_OR_RETURN(Tensor cast, AutoCast(x));
    xs.push_back(std::move(cast));
  }
  const int rank = xs[0].rank();
  const int ax = axis < 0 ? axis + rank : axis;
  if (ax < 0 || ax >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("Concat: axis ", axis, " is out of range for rank ", rank));
  }
  Shape out_shape = xs[0].shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(xs[i], "Concat", absl::StrCat("input ", i)));
    bool ok = xs[i].rank() == rank;
    for (int d = 0; ok && d < rank; ++d) ok = d == ax || xs[i].dim(d) == out_shape.dim(d);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("Concat: input ", i, " has shape ", xs[i].shape().DebugString(),
                       ", incompatible with ", out_shape.DebugString(), " along axis ", ax));
    }
    total += xs[i].dim(ax);
  }
  out_shape.set_dim(ax, total);
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Concat", {&xs[0]}));
  for (size_t i = 1; i < xs.size(); ++i) {
    if (!(xs[i].device() == xs[0].device())) {
      return absl::InvalidArgumentError(absl::StrCat("Concat: input ", i, " is on ",
                                                     xs[i].device().DebugString(), ", input 0 on ",
                                                     xs[0].device().DebugString()));
    }
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, out_shape));
  SLUICE_RETURN_IF_ERROR(backend->Concat(xs, ax, out));
  if (autodiff::ShouldRecord(xs)) {
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) shapes.push_back(x.shape());
    autodiff::RecordOperation(
        xs, out,
        [backend, shapes,
         ax](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          std::vector<Tensor> parts;
          for (const Shape& s : shapes) {
            SLUICE_ASSIGN_OR_RETURN(Tensor part, backend->Allocate(DType::kFloat32, s));
            parts.push_back(part);
          }
          SLUICE_RETURN_IF_ERROR(backend->Split(g, ax, parts));
          return std::vector<std::optional<Tensor>>(parts.begin(), parts.end());
        });
  }
  return out;
}

}  // namespace sluice::train::ops
