#include "train/sequential.h"

#include "core/status_macros.h"

namespace sluice::train::layers {

Sequential& Sequential::Add(std::unique_ptr<Module> module) {
  module->SetTraining(training());
  modules_.push_back(std::move(module));
  return *this;
}

absl::StatusOr<Tensor> Sequential::Forward(const Tensor& input) {
  Tensor x = input;
  for (auto& m : modules_) {
    ASSIGN_OR_RETURN(x, m->Forward(x));
  }
  return x;
}

std::vector<Variable*> Sequential::TrainableVariables() {
  std::vector<Variable*> vars;
  for (auto& m : modules_) {
    for (Variable* v : m->TrainableVariables()) vars.push_back(v);
  }
  return vars;
}

void Sequential::SetTraining(bool training) {
  Module::SetTraining(training);
  for (auto& m : modules_) m->SetTraining(training);
}

}  // namespace sluice::train::layers
