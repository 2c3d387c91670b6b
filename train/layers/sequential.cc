#include "train/layers/sequential.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::train::layers {

Sequential::Sequential(std::vector<std::unique_ptr<Module>> modules) {
  for (auto& m : modules) Add(std::move(m));
}

Sequential& Sequential::Add(std::unique_ptr<Module> module) {
  PrefixVariableNames(*module, absl::StrCat(modules_.size(), "/"));
  modules_.push_back(std::move(module));
  return *this;
}

absl::StatusOr<Tensor> Sequential::Forward(const Tensor& input, bool training) {
  Tensor x = input;
  for (auto& m : modules_) {
    SLUICE_ASSIGN_OR_RETURN(x, m->Forward(x, training));
  }
  return x;
}

std::vector<autodiff::Variable*> Sequential::TrainableVariables() {
  std::vector<autodiff::Variable*> vars;
  for (auto& m : modules_) {
    for (autodiff::Variable* v : m->TrainableVariables()) vars.push_back(v);
  }
  return vars;
}

std::vector<autodiff::Variable*> Sequential::Variables() {
  std::vector<autodiff::Variable*> vars;
  for (auto& m : modules_) {
    for (autodiff::Variable* v : m->Variables()) vars.push_back(v);
  }
  return TrainableFirst(std::move(vars));
}

}  // namespace sluice::train::layers
