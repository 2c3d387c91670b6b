#ifndef SLUICE_TRAIN_LAYERS_MERGE_H_
#define SLUICE_TRAIN_LAYERS_MERGE_H_

#include <string>
#include <vector>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Keras' merging layers' base (Add, Multiply, Concatenate): a layer of several inputs, called in
// a functional model (model.h) through ForwardInputs. Forward, with one input, is
// InvalidArgument naming the layer.
class Merge : public Module {
 public:
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) final;
  absl::StatusOr<Tensor> ForwardInputs(const std::vector<Tensor>& inputs, bool training) final;

 protected:
  // `inputs` holds two or more tensors.
  virtual absl::StatusOr<Tensor> Merged(const std::vector<Tensor>& inputs) = 0;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_MERGE_H_
