#ifndef SLUICE_TRAIN_LAYERS_RESIDUAL_BLOCK_H_
#define SLUICE_TRAIN_LAYERS_RESIDUAL_BLOCK_H_

#include <cstdint>
#include <optional>
#include <string>

#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/initializers.h"
#include "train/layers/module.h"

namespace sluice::train::layers {

struct ResidualBlockOptions {
  int64_t stride = 1;  // of the first conv and of the projection
  BatchNormOptions batch_norm = {};
  // He normal, as ResNets are usually initialised (He et al. 2015).
  Initializer kernel_initializer = Initializer::kHeNormal;
  // Each conv gets its own seed from it; unset: the next of layer_seed.h's sequence.
  std::optional<uint64_t> seed;
  // Gradient checkpointing inside the block (RecomputeGrad): conv1 -> bn1, conv2 -> bn2 and the
  // projection (conv -> batch norm) each keep only their input for the backward pass and run
  // again there; the relus and the add are recorded as usual. The block then holds the first
  // relu's output and its own output: finer than Recompute around the whole block, whose
  // backward rebuilds all its activations at once.
  bool recompute = false;
};

// The ResNet v1 basic block (He et al. 2016) on NHWC input:
//   y = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x))
// conv1 is 3x3 with `stride`, conv2 3x3 with stride 1, both "same" padded and
// without bias (batch norm's beta replaces it). The shortcut is x itself, or
// a 1x1 conv with `stride` then batch norm (a projection) when the stride is
// not 1 or the channel count changes. Variable names start with "conv1/",
// "bn1/", "conv2/", "bn2/", "shortcut_conv/", "shortcut_bn/".
class ResidualBlock : public Module {
 public:
  ResidualBlock(int64_t in_channels, int64_t filters, ResidualBlockOptions options = {});
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::string name() const override { return "residual_block"; }
  absl::StatusOr<LayerConfig> GetConfig() override;
  std::vector<autodiff::Variable*> Variables() override { return ChildVariables(*this); }
  std::vector<Module*> Children() override;
  bool has_projection() const { return shortcut_conv_.has_value(); }
  bool recompute() const { return options_.recompute; }

 private:
  // conv then batch norm (and its ReLU, fused, with `relu`): one recomputed segment, `name` in
  // its errors, when options_.recompute.
  absl::StatusOr<Tensor> ConvBatchNorm(const char* name, Conv2D& conv, BatchNorm& bn,
                                       const Tensor& input, bool training, bool relu);

  int64_t in_channels_, filters_;
  ResidualBlockOptions options_;
  Conv2D conv1_;
  BatchNorm bn1_;
  Conv2D conv2_;
  BatchNorm bn2_;
  std::optional<Conv2D> shortcut_conv_;
  std::optional<BatchNorm> shortcut_bn_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_RESIDUAL_BLOCK_H_
