#include "train/concat.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> Concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) return absl::InvalidArgumentError("Concat: no tensors");
  const int rank = xs[0].rank();
  const int ax = axis < 0 ? axis + rank : axis;
  if (ax < 0 || ax >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("Concat: axis ", axis, " is out of range for rank ", rank));
  }
  Shape out_shape = xs[0].shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    RETURN_IF_ERROR(RequireFloat32(xs[i], "Concat", absl::StrCat("input ", i)));
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
  // Viewed as [outer, dim(ax) * inner], each input is a contiguous block per row.
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; ++d) outer *= out_shape.dim(d);
  for (int d = ax + 1; d < rank; ++d) inner *= out_shape.dim(d);
  Tensor out(DType::kFloat32, out_shape);
  std::vector<int64_t> widths;
  int64_t offset = 0;
  for (const Tensor& x : xs) {
    const int64_t w = x.dim(ax) * inner;
    for (int64_t r = 0; r < outer; ++r) {
      std::memcpy(out.data<float>() + r * total * inner + offset, x.data<float>() + r * w,
                  w * sizeof(float));
    }
    widths.push_back(w);
    offset += w;
  }
  if (ShouldRecord(xs)) {
    std::vector<Shape> shapes;
    for (const Tensor& x : xs) shapes.push_back(x.shape());
    RecordOperation(xs, out,
                    [shapes, widths, outer, total,
                     inner](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      std::vector<std::optional<Tensor>> grads;
                      int64_t offset = 0;
                      for (size_t i = 0; i < shapes.size(); ++i) {
                        Tensor gx(DType::kFloat32, shapes[i]);
                        for (int64_t r = 0; r < outer; ++r) {
                          std::memcpy(gx.data<float>() + r * widths[i],
                                      g.data<float>() + r * total * inner + offset,
                                      widths[i] * sizeof(float));
                        }
                        offset += widths[i];
                        grads.push_back(gx);
                      }
                      return grads;
                    });
  }
  return out;
}

}  // namespace sluice::train
