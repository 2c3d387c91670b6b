#include "train/activations.h"

#include <cmath>

#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

// Applies `f` elementwise; the backward multiplies by `df(x, y)`.
template <typename F, typename DF>
absl::StatusOr<Tensor> Unary(const Tensor& x, const char* name, F f, DF df) {
  RETURN_IF_ERROR(RequireFloat32(x, name, "x"));
  Tensor y(DType::kFloat32, x.shape());
  const float* in = x.data<float>();
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) out[i] = f(in[i]);
  if (ShouldRecord({x})) {
    RecordOperation(
        {x}, y, [x, y, df](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
          Tensor gx(DType::kFloat32, x.shape());
          const float* in = x.data<float>();
          const float* out = y.data<float>();
          const float* d = g.data<float>();
          float* o = gx.data<float>();
          for (int64_t i = 0; i < x.num_elements(); ++i) o[i] = d[i] * df(in[i], out[i]);
          return std::vector<std::optional<Tensor>>{gx};
        });
  }
  return y;
}

}  // namespace

absl::StatusOr<Tensor> Relu(const Tensor& x) {
  return Unary(
      x, "Relu", [](float v) { return v > 0 ? v : 0.0f; },
      [](float v, float) { return v > 0 ? 1.0f : 0.0f; });
}

absl::StatusOr<Tensor> Sigmoid(const Tensor& x) {
  return Unary(
      x, "Sigmoid", [](float v) { return 1.0f / (1.0f + std::exp(-v)); },
      [](float, float y) { return y * (1.0f - y); });
}

absl::StatusOr<Tensor> Tanh(const Tensor& x) {
  return Unary(
      x, "Tanh", [](float v) { return std::tanh(v); }, [](float, float y) { return 1.0f - y * y; });
}

absl::StatusOr<Tensor> Gelu(const Tensor& x) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  constexpr float kInvSqrt2Pi = 0.39894228040143268f;
  return Unary(
      x, "Gelu", [](float v) { return 0.5f * v * (1.0f + std::erf(v * kInvSqrt2)); },
      [](float v, float) {
        // d/dx x*Phi(x) = Phi(x) + x*phi(x)
        return 0.5f * (1.0f + std::erf(v * kInvSqrt2)) + v * kInvSqrt2Pi * std::exp(-0.5f * v * v);
      });
}

}  // namespace sluice::train
