#ifndef SLUICE_TRAIN_LAYERS_DROPOUT_H_
#define SLUICE_TRAIN_LAYERS_DROPOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/autodiff/variable.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

// Drops only while training. The mask of a training call is a function of
// (seed, number of training calls before it), and that count lives in a
// non-trainable float32 scalar Variable ("dropout/calls", in Variables()), so a
// checkpoint that saves Variables() resumes with exactly the masks an
// uninterrupted run would draw. float32 counts exactly to 2^24 calls; past
// that Forward returns an error rather than repeat masks.
class Dropout : public Module {
 public:
  // Unset `seed`: the next of layer_seed.h's sequence.
  explicit Dropout(float rate, std::optional<uint64_t> seed = std::nullopt);
  // OK for a rate in [0, 1), as Keras checks it when the layer is made (a constructor cannot
  // return it: Forward does, training or not, and the config loader does).
  static absl::Status CheckRate(float rate);
  // The input itself at inference and at rate 0, as Keras' call.
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "dropout"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  std::vector<autodiff::Variable*> Variables() override { return {&calls_}; }
  int64_t calls() const { return static_cast<int64_t>(calls_.value().scalar<float>()); }

 private:
  // The seed of this call's mask, counting the call: on every call eagerly, and again at every
  // replay of a traced step (backend/trace_hooks.h), so that replays draw new masks.
  absl::StatusOr<uint64_t> NextSeed();

  float rate_;
  uint64_t seed_;
  autodiff::Variable calls_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_DROPOUT_H_
