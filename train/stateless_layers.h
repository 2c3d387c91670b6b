#ifndef SLUICE_TRAIN_STATELESS_LAYERS_H_
#define SLUICE_TRAIN_STATELESS_LAYERS_H_

#include "train/dropout.h"
#include "train/module.h"
#include "train/pool.h"

namespace sluice::train::layers {

// Layers with no variables: each is one op as a Module, so that Sequential
// can hold it. Kept together because each is three lines.

class ReLU : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input) override;
};

class MaxPool : public Module {
 public:
  explicit MaxPool(Pool2DOptions options = {}) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input) override;

 private:
  Pool2DOptions options_;
};

class Flatten : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input) override;
};

// Drops only while training; each training call uses the next seed, so
// successive steps draw different masks yet a run is reproducible.
class Dropout : public Module {
 public:
  explicit Dropout(float rate, uint64_t seed = 0) : rate_(rate), seed_(seed) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input) override;

 private:
  float rate_;
  uint64_t seed_;
  uint64_t calls_ = 0;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_STATELESS_LAYERS_H_
