#include "train/transpose.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "train/backend.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> Transpose(const Tensor& x, std::vector<int> perm) {
  RETURN_IF_ERROR(RequireFloat32(x, "Transpose", "x"));
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
  ASSIGN_OR_RETURN(Backend * backend, BackendFor("Transpose", {&x}));
  ASSIGN_OR_RETURN(Tensor out, backend->Allocate(DType::kFloat32, out_shape));
  RETURN_IF_ERROR(backend->Transpose(x, perm, out));
  if (ShouldRecord({x})) {
    std::vector<int> inverse(rank);
    for (int i = 0; i < rank; ++i) inverse[perm[i]] = i;
    RecordOperation(
        {x}, out, [inverse](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          ASSIGN_OR_RETURN(Tensor gx, Transpose(g, inverse));
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return out;
}

}  // namespace sluice::train
