#include "train/optimizer.h"

#include "absl/strings/str_cat.h"

namespace sluice::train {

absl::Status Optimizer::Apply(const std::vector<std::optional<Tensor>>& grads,
                              const std::vector<Variable*>& vars) {
  if (grads.size() != vars.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Optimizer::Apply: ", grads.size(),
                                                   " gradients for ", vars.size(), " variables"));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    if (grads[i] &&
        (grads[i]->dtype() != DType::kFloat32 || grads[i]->shape() != vars[i]->shape())) {
      return absl::InvalidArgumentError(
          absl::StrCat("Optimizer::Apply: gradient ", i, " is ", DTypeName(grads[i]->dtype()),
                       grads[i]->shape().DebugString(), " but variable '", vars[i]->name(),
                       "' is float32", vars[i]->shape().DebugString()));
    }
  }
  ++iterations_;
  for (size_t i = 0; i < vars.size(); ++i) {
    if (grads[i]) Update(*vars[i], *grads[i], iterations_);
  }
  return absl::OkStatus();
}

}  // namespace sluice::train
