#include "train/ops/transpose.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/require_float32.h"
#include "train/ops/autocast.h"

namespace sluice::train::ops {

absl::StatusOr<Tensor> Transpose(const Tensor& x_in, std::vector<int> perm) {
  SLUICE_ASSIGN_OR_RETURN(const Tensor x, AutoCast(x_in));
  SLUICE_RETURN_IF_ERROR(backend::RequireFloat32(x, "Transpose", "x"));
  const int rank = x.rank();
  if (perm.empty()) {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int>(perm.size()) == rank;
  for (int p : perm) {
    ok = ok && p >= 0 && p < rank && !seen[p];
    if (ok) seen[p] = true;
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("Transpose: [", absl::StrJoin(perm, ", "),
                                                   "] is not a permutation of rank ", rank));
  }
  Shape out_shape;
  for (int i = 0; i < rank; ++i) out_shape.AddDim(x.dim(perm[i]));
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor("Transpose", {&x}));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, out_shape));
  SLUICE_RETURN_IF_ERROR(backend->Transpose(x, perm, out));
  if (autodiff::ShouldRecord({x})) {
    std::vector<int> inverse(rank);
    for (int i = 0; i < rank; ++i) inverse[perm[i]] = i;
    autodiff::RecordOperation(
        {x}, out, [inverse](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          SLUICE_ASSIGN_OR_RETURN(Tensor gx, Transpose(g, inverse));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return out;
}

}  // namespace sluice::train::ops
