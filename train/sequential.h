#ifndef SLUICE_TRAIN_SEQUENTIAL_H_
#define SLUICE_TRAIN_SEQUENTIAL_H_

#include <memory>
#include <vector>

#include "train/module.h"

namespace sluice::train::layers {

// Runs its modules in order; its variables are theirs, in order.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::unique_ptr<Module>> modules)
      : modules_(std::move(modules)) {}

  Sequential& Add(std::unique_ptr<Module> module);
  absl::StatusOr<Tensor> Forward(const Tensor& input) override;
  std::vector<Variable*> TrainableVariables() override;
  void SetTraining(bool training) override;

 private:
  std::vector<std::unique_ptr<Module>> modules_;
};

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_SEQUENTIAL_H_
