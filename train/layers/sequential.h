#ifndef SLUICE_TRAIN_LAYERS_SEQUENTIAL_H_
#define SLUICE_TRAIN_LAYERS_SEQUENTIAL_H_

#include <memory>
#include <vector>

#include "train/layers/module.h"

namespace sluice::train::layers {

// Runs its modules in order; its variables are theirs, in order (trainable
// ones first in Variables()). Adding module i prefixes its variables' names
// with "i/" ("0/dense/kernel", "2/dense/kernel"), so that they stay unique.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::unique_ptr<Module>> modules);

  Sequential& Add(std::unique_ptr<Module> module);
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override;
  std::vector<autodiff::Variable*> TrainableVariables() override;
  std::vector<autodiff::Variable*> Variables() override;
  size_t size() const { return modules_.size(); }
  Module& module(size_t i) { return *modules_[i]; }

 private:
  std::vector<std::unique_ptr<Module>> modules_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_SEQUENTIAL_H_
