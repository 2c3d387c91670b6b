// The CpuBackend's row-wise softmax and sparse softmax cross-entropy, with their gradients: rows
// split across CpuThreads() (ParallelFor).

#include <algorithm>
#include <cmath>

#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/cpu/cpu_kernel_util.h"
#include "train/backend/cpu/cpu_threads.h"

namespace sluice::train::backend::cpu {
namespace {

void SoftmaxRow(const float* x, float* o, int64_t c) {
  const float m = *std::max_element(x, x + c);
  double sum = 0;
  for (int64_t j = 0; j < c; ++j) sum += (o[j] = std::exp(x[j] - m));
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < c; ++j) o[j] *= inv;
}

int64_t Rows(const Tensor& t) {
  const int64_t c = t.dim(t.rank() - 1);
  return c == 0 ? 0 : t.num_elements() / c;
}

}  // namespace

absl::Status CpuBackend::Softmax(const Tensor& logits, Tensor& y) {
  const int64_t c = logits.dim(logits.rank() - 1), rows = Rows(logits);
  const float* x = logits.data<float>();
  float* o = y.data<float>();
  ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1) / 8),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) SoftmaxRow(x + r * c, o + r * c, c);
              });
  return absl::OkStatus();
}

absl::Status CpuBackend::SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const int64_t c = y.dim(y.rank() - 1), rows = Rows(y);
  ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1)),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  // dx = y * (g - sum(g * y)) per row.
                  const float* p = y.data<float>() + r * c;
                  const float* d = grad_y.data<float>() + r * c;
                  float* o = grad_x.data<float>() + r * c;
                  double dot = 0;
                  for (int64_t j = 0; j < c; ++j) dot += d[j] * p[j];
                  for (int64_t j = 0; j < c; ++j) o[j] = p[j] * (d[j] - static_cast<float>(dot));
                }
              });
  return absl::OkStatus();
}

absl::Status CpuBackend::SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                                   Tensor& loss, Tensor& probs, float scale,
                                                   Tensor* reduced) {
  const int64_t n = logits.dim(0), c = logits.dim(1);
  const int64_t* label = labels.data<int64_t>();
  ParallelFor(n, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1) / 8),
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  const float* x = logits.data<float>() + i * c;
                  float* p = probs.data<float>() + i * c;
                  const float m = c > 0 ? *std::max_element(x, x + c) : 0.0f;
                  double sum = 0;
                  for (int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<double>(x[j] - m));
                  const double log_sum = std::log(sum);
                  for (int64_t j = 0; j < c; ++j) {
                    p[j] = static_cast<float>(std::exp(x[j] - m - log_sum));
                  }
                  loss.data<float>()[i] = static_cast<float>(m + log_sum - x[label[i]]);
                }
              });
  // The rows' losses summed in order after the parallel pass: Reduce's bits (as in AccumulateSum).
  if (reduced != nullptr) reduced->data<float>()[0] = ScaledSum(loss.data<float>(), n, scale);
  return absl::OkStatus();
}

absl::Status CpuBackend::SparseSoftmaxCrossEntropyBackward(const Tensor& probs,
                                                           const Tensor& labels,
                                                           const Tensor& grad_loss, float scale,
                                                           Tensor& grad_logits) {
  const int64_t n = probs.dim(0), c = probs.dim(1);
  const int64_t* label = labels.data<int64_t>();
  const bool one_gradient = grad_loss.num_elements() == 1;  // the reduced loss's
  ParallelFor(n, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      // d loss_n / d logits_n = softmax - one_hot(label).
      const float* p = probs.data<float>() + i * c;
      float* o = grad_logits.data<float>() + i * c;
      const float d = grad_loss.data<float>()[one_gradient ? 0 : i] * scale;
      for (int64_t j = 0; j < c; ++j) o[j] = d * p[j];
      o[label[i]] -= d;
    }
  });
  return absl::OkStatus();
}

}  // namespace sluice::train::backend::cpu
