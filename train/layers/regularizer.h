#ifndef SLUICE_TRAIN_LAYERS_REGULARIZER_H_
#define SLUICE_TRAIN_LAYERS_REGULARIZER_H_

#include <optional>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::layers {

// keras.regularizers.L1L2: the penalty l1 * sum(|w|) + l2 * sum(w^2) on a weight, added to the
// training loss (Module::AddLosses). Regularizer::L2(0.02) is Keras' l2(0.02).
struct Regularizer {
  float l1 = 0;
  float l2 = 0;

  static Regularizer L1(float l1) { return {.l1 = l1}; }
  static Regularizer L2(float l2) { return {.l2 = l2}; }
  static Regularizer L1L2(float l1, float l2) { return {.l1 = l1, .l2 = l2}; }

  bool active() const { return l1 != 0 || l2 != 0; }
  // The penalty of `weight` as a float32 scalar on its device, recorded by an active tape.
  absl::StatusOr<Tensor> Penalty(const Tensor& weight) const;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_REGULARIZER_H_
