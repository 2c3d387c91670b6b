#include "train/batch_norm.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/broadcast.h"
#include "train/tape.h"

namespace sluice::train {
namespace {

absl::Status CheckShapes(const char* name, const Tensor& x,
                         std::initializer_list<const Tensor*> params) {
  RETURN_IF_ERROR(RequireFloat32(x, name, "x"));
  if (x.rank() < 1)
    return absl::InvalidArgumentError(absl::StrCat(name, ": x must have rank >= 1"));
  const int64_t c = x.dim(x.rank() - 1);
  for (const Tensor* p : params) {
    RETURN_IF_ERROR(RequireFloat32(*p, name, "parameter"));
    if (p->rank() != 1 || p->dim(0) != c) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": parameters must be [", c, "] for x ",
                                                     x.shape().DebugString(), ", got ",
                                                     p->shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

// y = gamma * (x - mean) * inv_std + beta, also returning x_hat.
void Normalize(const Tensor& x, const float* gamma, const float* beta, const float* mean,
               const float* inv_std, Tensor& y, Tensor& x_hat) {
  const int64_t c = x.dim(x.rank() - 1);
  const float* in = x.data<float>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t k = i % c;
    x_hat.data<float>()[i] = (in[i] - mean[k]) * inv_std[k];
    y.data<float>()[i] = gamma[k] * x_hat.data<float>()[i] + beta[k];
  }
}

// d beta = sum g, d gamma = sum g * x_hat, per channel.
void ParamGrads(const Tensor& g, const Tensor& x_hat, int64_t c, Tensor& d_gamma, Tensor& d_beta) {
  std::vector<double> dg(c, 0), db(c, 0);
  for (int64_t i = 0; i < g.num_elements(); ++i) {
    db[i % c] += g.data<float>()[i];
    dg[i % c] += static_cast<double>(g.data<float>()[i]) * x_hat.data<float>()[i];
  }
  for (int64_t k = 0; k < c; ++k) {
    d_gamma.data<float>()[k] = static_cast<float>(dg[k]);
    d_beta.data<float>()[k] = static_cast<float>(db[k]);
  }
}

}  // namespace

absl::StatusOr<BatchNormTrainingResult> BatchNormTraining(const Tensor& x, const Tensor& gamma,
                                                          const Tensor& beta, float epsilon) {
  RETURN_IF_ERROR(CheckShapes("BatchNormTraining", x, {&gamma, &beta}));
  const int64_t c = x.dim(x.rank() - 1);
  const int64_t m = c == 0 ? 0 : x.num_elements() / c;
  if (m == 0) return absl::InvalidArgumentError("BatchNormTraining: empty batch");
  std::vector<double> sum(c, 0), sq(c, 0);
  for (int64_t i = 0; i < x.num_elements(); ++i) sum[i % c] += x.data<float>()[i];
  Tensor mean(DType::kFloat32, Shape{c}), variance(DType::kFloat32, Shape{c});
  for (int64_t k = 0; k < c; ++k) mean.data<float>()[k] = static_cast<float>(sum[k] / m);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double d = x.data<float>()[i] - mean.data<float>()[i % c];
    sq[i % c] += d * d;
  }
  std::vector<float> inv_std(c);
  for (int64_t k = 0; k < c; ++k) {
    variance.data<float>()[k] = static_cast<float>(sq[k] / m);
    inv_std[k] = 1.0f / std::sqrt(variance.data<float>()[k] + epsilon);
  }
  Tensor y(DType::kFloat32, x.shape()), x_hat(DType::kFloat32, x.shape());
  Normalize(x, gamma.data<float>(), beta.data<float>(), mean.data<float>(), inv_std.data(), y,
            x_hat);
  if (ShouldRecord({x, gamma, beta})) {
    RecordOperation({x, gamma, beta}, y,
                    [x_hat, gamma, inv_std, c,
                     m](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      Tensor d_gamma(DType::kFloat32, Shape{c}), d_beta(DType::kFloat32, Shape{c});
                      ParamGrads(g, x_hat, c, d_gamma, d_beta);
                      // dx = gamma * inv_std / m * (m g - sum g - x_hat sum(g x_hat))
                      Tensor dx(DType::kFloat32, g.shape());
                      for (int64_t i = 0; i < g.num_elements(); ++i) {
                        const int64_t k = i % c;
                        dx.data<float>()[i] =
                            gamma.data<float>()[k] * inv_std[k] / static_cast<float>(m) *
                            (static_cast<float>(m) * g.data<float>()[i] - d_beta.data<float>()[k] -
                             x_hat.data<float>()[i] * d_gamma.data<float>()[k]);
                      }
                      return std::vector<std::optional<Tensor>>{dx, d_gamma, d_beta};
                    });
  }
  return BatchNormTrainingResult{y, mean, variance};
}

absl::StatusOr<Tensor> BatchNormInference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                          const Tensor& mean, const Tensor& variance,
                                          float epsilon) {
  RETURN_IF_ERROR(CheckShapes("BatchNormInference", x, {&gamma, &beta, &mean, &variance}));
  const int64_t c = x.dim(x.rank() - 1);
  std::vector<float> inv_std(c);
  for (int64_t k = 0; k < c; ++k)
    inv_std[k] = 1.0f / std::sqrt(variance.data<float>()[k] + epsilon);
  Tensor y(DType::kFloat32, x.shape()), x_hat(DType::kFloat32, x.shape());
  Normalize(x, gamma.data<float>(), beta.data<float>(), mean.data<float>(), inv_std.data(), y,
            x_hat);
  if (ShouldRecord({x, gamma, beta, mean, variance})) {
    RecordOperation({x, gamma, beta, mean, variance}, y,
                    [x_hat, gamma, inv_std,
                     c](const Tensor& g) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
                      Tensor d_gamma(DType::kFloat32, Shape{c}), d_beta(DType::kFloat32, Shape{c});
                      ParamGrads(g, x_hat, c, d_gamma, d_beta);
                      Tensor dx(DType::kFloat32, g.shape());
                      for (int64_t i = 0; i < g.num_elements(); ++i) {
                        dx.data<float>()[i] =
                            g.data<float>()[i] * gamma.data<float>()[i % c] * inv_std[i % c];
                      }
                      return std::vector<std::optional<Tensor>>{dx, d_gamma, d_beta, std::nullopt,
                                                                std::nullopt};
                    });
  }
  return y;
}

}  // namespace sluice::train
