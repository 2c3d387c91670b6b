#include "train/optimizers/gradient_accumulator.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/transfer.h"

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
      // Our own buffer: the caller's stays untouched.
      SLUICE_ASSIGN_OR_RETURN(sums_[i], backend::Clone(*grads[i]));
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend,
                            backend::BackendFor("GradientAccumulator", {&*sums_[i], &*grads[i]}));
    SLUICE_RETURN_IF_ERROR(backend->Axpby(1.0f, *grads[i], 1.0f, *sums_[i]));
  }
  ++added_;
  return absl::OkStatus();
}

absl::Status GradientAccumulator::Restore(int added, std::vector<std::optional<Tensor>> sums) {
  if (added < 1 || added >= steps_) {
    return absl::InvalidArgumentError(absl::StrCat("GradientAccumulator::Restore: ", added,
                                                   " micro-batches outside [1, ", steps_, ")"));
  }
  for (const std::optional<Tensor>& s : sums) {
    if (s && s->dtype() != DType::kFloat32) {
      return absl::InvalidArgumentError("GradientAccumulator::Restore: sums must be float32");
    }
  }
  added_ = added;
  sums_ = std::move(sums);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<Tensor>>> GradientAccumulator::Average() {
  std::vector<std::optional<Tensor>> mean = std::move(sums_);
  const int added = added_;
  sums_.clear();
  added_ = 0;
  if (added > 1) {
    // A division (not a product with 1/n) by a scalar on the sums' device, made once.
    std::optional<Tensor> n;
    for (auto& m : mean) {
      if (!m) continue;
      SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(m->device()));
      if (!n || !(n->device() == m->device())) {
        SLUICE_ASSIGN_OR_RETURN(n, backend->Allocate(DType::kFloat32, Shape{}));
        SLUICE_RETURN_IF_ERROR(backend->Fill(*n, static_cast<float>(added)));
      }
      SLUICE_RETURN_IF_ERROR(backend->Binary(backend::BinaryOp::kDiv, *m, *n, *m));
    }
  }
  return mean;
}

}  // namespace sluice::train::optimizers
