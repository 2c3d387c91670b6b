#ifndef SLUICE_TRAIN_LAYERS_DENSE_H_
#define SLUICE_TRAIN_LAYERS_DENSE_H_

#include <cstdint>
#include <optional>

#include "train/layers/initializers.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

struct DenseOptions {
  bool use_bias = true;
  Initializer kernel_initializer = Initializer::kGlorotUniform;
  Initializer bias_initializer = Initializer::kZeros;
  uint64_t seed = 0;
};

// y = x kernel + bias, x [N, in], kernel [in, units], bias [units].
class Dense : public Module {
 public:
  Dense(int64_t in_features, int64_t units, DenseOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::vector<autodiff::Variable*> TrainableVariables() override;
  autodiff::Variable& kernel() { return kernel_; }
  autodiff::Variable* bias() { return bias_ ? &*bias_ : nullptr; }

 private:
  autodiff::Variable kernel_;
  std::optional<autodiff::Variable> bias_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_DENSE_H_
