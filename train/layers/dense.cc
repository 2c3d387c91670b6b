#include "train/layers/dense.h"

#include "core/status_macros.h"
#include "train/ops/arithmetic.h"
#include "train/ops/matmul.h"

namespace sluice::train::layers {

Dense::Dense(int64_t in_features, int64_t units, DenseOptions options)
    : kernel_(Initialize(options.kernel_initializer, Shape{in_features, units}, options.seed),
              "dense/kernel") {
  if (options.use_bias) {
    bias_.emplace(Initialize(options.bias_initializer, Shape{units}, options.seed + 1),
                  "dense/bias");
  }
}

absl::StatusOr<Tensor> Dense::Forward(const Tensor& input, bool) {
  SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::MatMul(input, kernel_.value()));
  if (!bias_) return y;
  return ops::Add(y, bias_->value());
}

std::vector<autodiff::Variable*> Dense::TrainableVariables() {
  std::vector<autodiff::Variable*> vars = {&kernel_};
  if (bias_) vars.push_back(&*bias_);
  return vars;
}

}  // namespace sluice::train::layers
