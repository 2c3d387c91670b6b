#ifndef SLUICE_OPS_NORMALIZATION_H_
#define SLUICE_OPS_NORMALIZATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// keras.layers.Normalization over the last axis: (x - mean[c]) / max(sqrt(variance[c]), 1e-7)
// for channel c, or with `invert` the reverse, x * sqrt(variance[c]) + mean[c]. mean and
// variance have one value per channel, or one for all. Keras' adapt() is
// NormalizationAdapter.
class Normalization {
 public:
  static absl::StatusOr<Normalization> Create(std::vector<float> mean, std::vector<float> variance,
                                              bool invert = false);

  // A float32 tensor whose last dimension is the channels (a batch [B, H, W, C] or any other).
  absl::StatusOr<Tensor> Apply(const Tensor& x) const;

  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& variance() const { return variance_; }

 private:
  Normalization(std::vector<float> mean, std::vector<float> variance, bool invert)
      : mean_(std::move(mean)), variance_(std::move(variance)), invert_(invert) {}
  std::vector<float> mean_, variance_;
  bool invert_;
};

// Keras' Normalization.adapt(data): the mean and (population) variance of each channel over
// every value seen. Feed it batches, e.g. from a pass over a dataset, then Finish().
class NormalizationAdapter {
 public:
  // A float32 tensor whose last dimension is the channels; every batch has the same number.
  absl::Status Add(const Tensor& x);
  absl::StatusOr<Normalization> Finish() const;

 private:
  // Per channel: count, mean and sum of squared deviations (Chan et al.'s parallel update, so
  // that large counts do not lose precision).
  int64_t count_ = 0;
  std::vector<double> mean_, m2_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_NORMALIZATION_H_
