#include "train/optimizers/gradient_accumulator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sluice::train::optimizers {

GradientAccumulator::GradientAccumulator(int steps) : steps_(std::max(steps, 1)) {}

absl::Status GradientAccumulator::Add(const std::vector<std::optional<Tensor>>& grads) {
  if (added_ > 0 && grads.size() != sums_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("GradientAccumulator::Add: ", grads.size(),
                                                   " gradients after ", sums_.size()));
  }
  if (added_ == 0) sums_.assign(grads.size(), std::nullopt);
  // Check every gradient before changing any sum, so that an error leaves the sums intact.
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) continue;
    if (grads[i]->dtype() != DType::kFloat32 ||
        (sums_[i] && grads[i]->shape() != sums_[i]->shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GradientAccumulator::Add: gradient ", i, " is ", DTypeName(grads[i]->dtype()),
          grads[i]->shape().DebugString(), ", expected float32",
          sums_[i] ? sums_[i]->shape().DebugString() : std::string()));
    }
  }
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) continue;
    if (!sums_[i]) {
      sums_[i] = grads[i]->Clone();  // our own buffer: the caller's stays untouched
      continue;
    }
    float* s = sums_[i]->data<float>();
    const float* g = grads[i]->data<float>();
    for (int64_t k = 0; k < sums_[i]->num_elements(); ++k) s[k] += g[k];
  }
  ++added_;
  return absl::OkStatus();
}

std::vector<std::optional<Tensor>> GradientAccumulator::Average() {
  std::vector<std::optional<Tensor>> mean = std::move(sums_);
  if (added_ > 1) {
    const float n = static_cast<float>(added_);
    for (auto& m : mean) {
      if (!m) continue;
      for (float& x : m->flat<float>()) x /= n;
    }
  }
  sums_.clear();
  added_ = 0;
  return mean;
}

}  // namespace sluice::train::optimizers
