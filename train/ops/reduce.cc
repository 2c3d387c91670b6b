#include "train/ops/reduce.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {
namespace {

enum class Kind { kSum, kMean, kMax };

absl::StatusOr<Tensor> Reduce(Kind kind, const Tensor& x_in, std::vector<int> axes, bool keepdims) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  const char* name = kind == Kind::kSum ? "Sum" : kind == Kind::kMean ? "Mean" : "Max";
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, name, "x"));
  std::vector<bool> reduced(x.rank(), axes.empty());
  for (int a : axes) {
    const int axis = a < 0 ? a + x.rank() : a;
    if (axis < 0 || axis >= x.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": axis ", a, " is out of range for rank ", x.rank()));
    }
    reduced[axis] = true;
  }
  // `kept` has 1 along reduced dims: the output read as broadcastable to x.
  Shape kept, out_shape;
  int64_t count = 1;
  for (int d = 0; d < x.rank(); ++d) {
    kept.AddDim(reduced[d] ? 1 : x.dim(d));
    if (reduced[d]) count *= x.dim(d);
    if (!reduced[d] || keepdims) out_shape.AddDim(reduced[d] ? 1 : x.dim(d));
  }
  if (kind == Kind::kMax && count == 0) {
    return absl::InvalidArgumentError("Max: cannot reduce over an empty axis");
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(name, {&x}));
  SLUICE_ASSIGN_OR_RETURN(Tensor out_kept, backend->Allocate(DType::kFloat32, kept));
  const float scale = kind == Kind::kMean && count > 0 ? 1.0f / static_cast<float>(count) : 1.0f;
  if (kind == Kind::kMean && count == 0) {
    // 0 / 0, as tf.reduce_mean, numpy and torch give (a sum over nothing is 0).
    SLUICE_RETURN_IF_ERROR(backend->Fill(out_kept, std::numeric_limits<float>::quiet_NaN()));
  } else {
    SLUICE_RETURN_IF_ERROR(
        backend->Reduce(kind == Kind::kMax ? backend::ReduceOp::kMax : backend::ReduceOp::kSum, x,
                        reduced, scale, out_kept));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor out, out_kept.Reshape(out_shape));
  SLUICE_RETURN_IF_ERROR(autodiff::CheckNumerics(name, out));
  if (autodiff::ShouldRecord({x})) {
    autodiff::RecordOperation(
        {x}, out,
        [backend, kind, x, out_kept, kept,
         scale](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, backend->Allocate(DType::kFloat32, x.shape()));
          SLUICE_ASSIGN_OR_RETURN(Tensor g_kept, g.Reshape(kept));
          if (kind == Kind::kMax) {
            SLUICE_RETURN_IF_ERROR(backend->ReduceMaxBackward(x, out_kept, g_kept, gx));
          } else {
            SLUICE_RETURN_IF_ERROR(backend->BroadcastTo(g_kept, scale, gx));
          }
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Sum(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return Reduce(Kind::kSum, x, std::move(axes), keepdims);
}
absl::StatusOr<Tensor> Mean(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return Reduce(Kind::kMean, x, std::move(axes), keepdims);
}
absl::StatusOr<Tensor> Max(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return Reduce(Kind::kMax, x, std::move(axes), keepdims);
}

absl::StatusOr<Tensor> ArgMax(const Tensor& x_in, int axis) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, "ArgMax", "x"));
  const int a = axis < 0 ? axis + x.rank() : axis;
  if (a < 0 || a >= x.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ArgMax: axis ", axis, " is out of range for rank ", x.rank()));
  }
  if (x.dim(a) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ArgMax: axis ", axis, " of ", x.shape().DebugString(), " is empty"));
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("ArgMax", {&x}));
  Shape out_shape;
  for (int d = 0; d < x.rank(); ++d) {
    if (d != a) out_shape.AddDim(x.dim(d));
  }
  // The kernel reduces the last axis: another axis is moved there first.
  Tensor rows = x;
  if (a != x.rank() - 1) {
    std::vector<int> perm;
    Shape moved;
    for (int d = 0; d < x.rank(); ++d) {
      if (d != a) perm.push_back(d);
    }
    perm.push_back(a);
    for (int d : perm) moved.AddDim(x.dim(d));
    SLUICE_ASSIGN_OR_RETURN(rows, backend->Allocate(DType::kFloat32, moved));
    SLUICE_RETURN_IF_ERROR(backend->Transpose(x, perm, rows));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kInt64, out_shape));
  SLUICE_RETURN_IF_ERROR(backend->ArgMax(rows, out));
  return out;
}

}  // namespace sluice::train::ops
