#include "train/reduce.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

enum class Kind { kSum, kMean, kMax };

absl::StatusOr<Tensor> Reduce(Kind kind, const Tensor& x, std::vector<int> axes, bool keepdims) {
  const char* name = kind == Kind::kSum ? "Sum" : kind == Kind::kMean ? "Mean" : "Max";
  RETURN_IF_ERROR(RequireFloat32(x, name, "x"));
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
  const std::vector<int64_t> so = BroadcastStrides(kept, x.shape());
  const std::vector<int64_t> zeros(x.rank(), 0);
  Tensor out(DType::kFloat32, out_shape);
  float* o = out.data<float>();
  const float* in = x.data<float>();
  std::fill_n(o, out.num_elements(),
              kind == Kind::kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
  ForEachBroadcast(x.shape(), so, zeros, [&](int64_t i, int64_t p, int64_t) {
    if (kind == Kind::kMax) {
      o[p] = std::max(o[p], in[i]);
    } else {
      o[p] += in[i];
    }
  });
  if (kind == Kind::kMean && count > 0) {
    for (float& v : out.flat<float>()) v /= static_cast<float>(count);
  }
  if (ShouldRecord({x})) {
    RecordOperation(
        {x}, out,
        [kind, x, out, so, zeros,
         count](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          Tensor gx(DType::kFloat32, x.shape());
          const float* d = g.data<float>();
          const float* in = x.data<float>();
          const float* m = out.data<float>();
          float* o = gx.data<float>();
          if (kind == Kind::kMax) {
            std::vector<float> ties(out.num_elements(), 0.0f);
            ForEachBroadcast(x.shape(), so, zeros, [&](int64_t i, int64_t p, int64_t) {
              if (in[i] == m[p]) ties[p] += 1;
            });
            ForEachBroadcast(x.shape(), so, zeros, [&](int64_t i, int64_t p, int64_t) {
              o[i] = in[i] == m[p] ? d[p] / ties[p] : 0.0f;
            });
          } else {
            const float scale = kind == Kind::kMean ? 1.0f / static_cast<float>(count) : 1.0f;
            ForEachBroadcast(x.shape(), so, zeros,
                             [&](int64_t i, int64_t p, int64_t) { o[i] = d[p] * scale; });
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

}  // namespace sluice::train
