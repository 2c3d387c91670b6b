#include "ops/normalization.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace sluice {
namespace {

// Keras' backend.epsilon(): the smallest standard deviation divided by.
constexpr float kEpsilon = 1e-7f;

absl::StatusOr<int64_t> Channels(const Tensor& x, const char* op) {
  if (x.dtype() != DType::kFloat32 || x.rank() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(op,
                                                   ": expected float32 with a channel axis, got ",
                                                   DTypeName(x.dtype()), x.shape().DebugString()));
  }
  return x.dim(x.rank() - 1);
}

}  // namespace

absl::StatusOr<Normalization> Normalization::Create(std::vector<float> mean,
                                                    std::vector<float> variance, bool invert) {
  if (mean.empty() || mean.size() != variance.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Normalization: mean has ", mean.size(),
                                                   " values and variance ", variance.size(),
                                                   "; give one per channel, or one"));
  }
  for (float v : variance) {
    if (!(v >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Normalization: variance must be >= 0, got ", v));
    }
  }
  return Normalization(std::move(mean), std::move(variance), invert);
}

absl::StatusOr<Tensor> Normalization::Apply(const Tensor& x) const {
  auto channels = Channels(x, "Normalization");
  if (!channels.ok()) return channels.status();
  const int64_t c = *channels;
  if (mean_.size() != 1 && static_cast<int64_t>(mean_.size()) != c) {
    return absl::InvalidArgumentError(
        absl::StrCat("Normalization: ", mean_.size(), " means for ", c, " channels"));
  }
  std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    const size_t k = mean_.size() == 1 ? 0 : static_cast<size_t>(i);
    scale[i] = std::max(std::sqrt(variance_[k]), kEpsilon);
    shift[i] = mean_[k];
  }
  Tensor out(DType::kFloat32, x.shape());
  const float* src = x.data<float>();
  float* dst = out.data<float>();
  const int64_t n = x.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ch = c == 0 ? 0 : i % c;
    dst[i] = invert_ ? src[i] * scale[ch] + shift[ch] : (src[i] - shift[ch]) / scale[ch];
  }
  return out;
}

absl::Status NormalizationAdapter::Add(const Tensor& x) {
  auto channels = Channels(x, "NormalizationAdapter");
  if (!channels.ok()) return channels.status();
  const int64_t c = *channels;
  if (mean_.empty()) {
    mean_.assign(static_cast<size_t>(c), 0.0);
    m2_.assign(static_cast<size_t>(c), 0.0);
  } else if (static_cast<int64_t>(mean_.size()) != c) {
    return absl::InvalidArgumentError(absl::StrCat("NormalizationAdapter: a batch of ", c,
                                                   " channels after batches of ", mean_.size()));
  }
  if (c == 0 || x.num_elements() == 0) return absl::OkStatus();
  const int64_t rows = x.num_elements() / c;
  const float* src = x.data<float>();
  for (int64_t ch = 0; ch < c; ++ch) {
    double batch_mean = 0;
    for (int64_t r = 0; r < rows; ++r) batch_mean += src[r * c + ch];
    batch_mean /= static_cast<double>(rows);
    double batch_m2 = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const double d = src[r * c + ch] - batch_mean;
      batch_m2 += d * d;
    }
    const double n_a = static_cast<double>(count_), n_b = static_cast<double>(rows);
    const double delta = batch_mean - mean_[ch];
    mean_[ch] += delta * n_b / (n_a + n_b);
    m2_[ch] += batch_m2 + delta * delta * n_a * n_b / (n_a + n_b);
  }
  count_ += rows;
  return absl::OkStatus();
}

absl::StatusOr<Normalization> NormalizationAdapter::Finish() const {
  if (count_ == 0) {
    return absl::FailedPreconditionError("NormalizationAdapter: no values were added");
  }
  std::vector<float> mean(mean_.size()), variance(mean_.size());
  for (size_t i = 0; i < mean_.size(); ++i) {
    mean[i] = static_cast<float>(mean_[i]);
    variance[i] = static_cast<float>(m2_[i] / static_cast<double>(count_));
  }
  return Normalization::Create(std::move(mean), std::move(variance));
}

}  // namespace sluice
