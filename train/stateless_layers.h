#ifndef SLUICE_TRAIN_STATELESS_LAYERS_H_
#define SLUICE_TRAIN_STATELESS_LAYERS_H_

#include <cstdint>

#include "train/dropout.h"
#include "train/module.h"
#include "train/pool.h"

namespace sluice::train::layers {

// Layers with no trainable variables: each is one op as a Module, so that
// Sequential can hold it. Kept together because each is a few lines.

class ReLU : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
};

class MaxPool : public Module {
 public:
  explicit MaxPool(Pool2DOptions options = {}) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;

 private:
  Pool2DOptions options_;
};

// Keras AveragePooling2D: padded positions do not count (see train/pool.h).
class AvgPool : public Module {
 public:
  explicit AvgPool(Pool2DOptions options = {}) : options_(options) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;

 private:
  Pool2DOptions options_;
};

// Keras GlobalAveragePooling2D: NHWC [N, H, W, C] to [N, C], the mean over H
// and W (the Mean op over axes {1, 2}, which carries the gradient).
class GlobalAvgPool : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
};

class Flatten : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
};

// Drops only while training. The mask of a training call is a function of
// (seed, number of training calls before it), and that count lives in a
// non-trainable float32 scalar Variable ("dropout/calls", in Variables()), so a
// checkpoint that saves Variables() resumes with exactly the masks an
// uninterrupted run would draw. float32 counts exactly to 2^24 calls; past
// that Forward returns an error rather than repeat masks.
class Dropout : public Module {
 public:
  explicit Dropout(float rate, uint64_t seed = 0);
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::vector<Variable*> Variables() override { return {&calls_}; }
  int64_t calls() const { return static_cast<int64_t>(calls_.value().scalar<float>()); }

 private:
  float rate_;
  uint64_t seed_;
  Variable calls_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_STATELESS_LAYERS_H_
