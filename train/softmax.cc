#include "train/softmax.h"

#include <algorithm>
#include <cmath>

#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {

absl::StatusOr<Tensor> Softmax(const Tensor& logits) {
  RETURN_IF_ERROR(RequireFloat32(logits, "Softmax", "logits"));
  if (logits.rank() < 1) return absl::InvalidArgumentError("Softmax: logits must have rank >= 1");
  const int64_t c = logits.dim(logits.rank() - 1);
  const int64_t rows = c == 0 ? 0 : logits.num_elements() / c;
  Tensor y(DType::kFloat32, logits.shape());
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits.data<float>() + r * c;
    float* o = y.data<float>() + r * c;
    const float m = *std::max_element(x, x + c);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += (o[j] = std::exp(x[j] - m));
    for (int64_t j = 0; j < c; ++j) o[j] = static_cast<float>(o[j] / sum);
  }
  if (ShouldRecord({logits})) {
    RecordOperation(
        {logits}, y,
        [y, rows, c](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          // dx = y * (g - sum(g * y)) per row.
          Tensor gx(DType::kFloat32, y.shape());
          for (int64_t r = 0; r < rows; ++r) {
            const float* p = y.data<float>() + r * c;
            const float* d = g.data<float>() + r * c;
            float* o = gx.data<float>() + r * c;
            double dot = 0;
            for (int64_t j = 0; j < c; ++j) dot += d[j] * p[j];
            for (int64_t j = 0; j < c; ++j) o[j] = p[j] * (d[j] - static_cast<float>(dot));
          }
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return y;
}

}  // namespace sluice::train
