#ifndef SLUICE_TRAIN_ADAM_H_
#define SLUICE_TRAIN_ADAM_H_

#include <map>

#include "train/optimizer.h"

namespace sluice::train {

// Keras' defaults.
struct AdamOptions {
  float learning_rate = 0.001f;
  float beta_1 = 0.9f;
  float beta_2 = 0.999f;
  float epsilon = 1e-7f;
};

// Keras Adam: m += (g - m)(1 - b1), v += (g^2 - v)(1 - b2),
// w -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps). Keras puts
// epsilon outside the bias correction of v; so do we, to match its steps.
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {}) : options_(options) {}

 protected:
  void Update(Variable& var, const Tensor& grad, int64_t step) override;

 private:
  struct Slots {
    Tensor m, v;
  };
  AdamOptions options_;
  std::map<const Variable*, Slots> slots_;
};

}  // namespace sluice::train

#endif  // SLUICE_TRAIN_ADAM_H_
