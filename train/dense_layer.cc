#include "train/dense_layer.h"

#include "core/status_macros.h"
#include "train/arithmetic.h"
#include "train/matmul.h"

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
  ASSIGN_OR_RETURN(Tensor y, MatMul(input, kernel_.value()));
  if (!bias_) return y;
  return Add(y, bias_->value());
}

std::vector<Variable*> Dense::TrainableVariables() {
  std::vector<Variable*> vars = {&kernel_};
  if (bias_) vars.push_back(&*bias_);
  return vars;
}

}  // namespace sluice::train::layers
