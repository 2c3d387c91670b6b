#include "train/transpose.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
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
  std::vector<int64_t> in_strides(rank, 1);
  for (int d = rank - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * x.dim(d + 1);
  Shape out_shape;
  std::vector<int64_t> read(rank), zeros(rank, 0);
  for (int i = 0; i < rank; ++i) {
    out_shape.AddDim(x.dim(perm[i]));
    read[i] = in_strides[perm[i]];
  }
  Tensor out(DType::kFloat32, out_shape);
  const float* in = x.data<float>();
  float* o = out.data<float>();
  ForEachBroadcast(out_shape, read, zeros, [&](int64_t i, int64_t p, int64_t) { o[i] = in[p]; });
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
