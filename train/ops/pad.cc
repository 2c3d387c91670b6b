#include "train/ops/pad.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"
#include "train/ops/concat.h"
#include "train/ops/reshape.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> ZeroPad(const Tensor& x_in,
                               const std::vector<std::pair<int64_t, int64_t>>& paddings) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, "ZeroPad", "input"));
  if (static_cast<int>(paddings.size()) != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("ZeroPad: ", paddings.size(),
                                                   " padding pairs for an input of rank ", x.rank(),
                                                   " ", x.shape().DebugString()));
  }
  for (size_t d = 0; d < paddings.size(); ++d) {
    if (paddings[d].first < 0 || paddings[d].second < 0) {
      return absl::InvalidArgumentError(absl::StrCat("ZeroPad: padding (", paddings[d].first, ", ",
                                                     paddings[d].second, ") of dim ", d,
                                                     " is negative"));
    }
  }
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("ZeroPad", {&x}));
  // One Concat per padded dim: zeros made on x's device (no gradient), x, zeros. Concat records
  // the gradient, which its Split crops back to x.
  Tensor y = x;
  bool padded = false;
  for (int d = 0; d < x.rank(); ++d) {
    const auto [before, after] = paddings[d];
    if (before == 0 && after == 0) continue;
    padded = true;
    std::vector<Tensor> parts;
    for (const int64_t size : {before, int64_t{-1}, after}) {
      if (size == -1) {
        parts.push_back(y);
        continue;
      }
      if (size == 0) continue;
      Shape shape = y.shape();
      shape.set_dim(d, size);
      SLUICE_ASSIGN_OR_RETURN(Tensor zeros, backend->Allocate(DType::kFloat32, shape));
      SLUICE_RETURN_IF_ERROR(backend->Fill(zeros, 0));
      parts.push_back(std::move(zeros));
    }
    SLUICE_ASSIGN_OR_RETURN(y, Concat(parts, d));
  }
  // Nothing to pad: still a new tensor (Reshape copies), so that the tape can tell the output
  // from the input.
  if (!padded) {
    return Reshape(x, std::vector<int64_t>(x.shape().dims().begin(), x.shape().dims().end()));
  }
  return y;
}

}  // namespace sluice::train::ops
