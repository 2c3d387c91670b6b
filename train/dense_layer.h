#ifndef SLUICE_TRAIN_DENSE_LAYER_H_
#define SLUICE_TRAIN_DENSE_LAYER_H_

#include <cstdint>
#include <optional>

#include "train/initializers.h"
#include "train/module.h"

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
  std::vector<Variable*> TrainableVariables() override;
  Variable& kernel() { return kernel_; }
  Variable* bias() { return bias_ ? &*bias_ : nullptr; }

 private:
  Variable kernel_;
  std::optional<Variable> bias_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_DENSE_LAYER_H_
