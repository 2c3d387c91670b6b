#include "train/layers/kernel_layer.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::layers {

std::vector<autodiff::Variable*> KernelLayer::Variables() {
  std::vector<autodiff::Variable*> vars;
  if (kernel_) vars.push_back(&*kernel_);
  if (bias_) vars.push_back(&*bias_);
  return vars;
}

absl::Status KernelLayer::AddLosses(std::vector<Tensor>& losses) {
  if (!kernel_ || !config_.kernel_regularizer || !config_.kernel_regularizer->active()) {
    return absl::OkStatus();
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor penalty, config_.kernel_regularizer->Penalty(kernel_->value()));
  losses.push_back(std::move(penalty));
  return absl::OkStatus();
}

void KernelLayer::CreateVariables(const Shape& kernel_shape) {
  kernel_.emplace(Initialize(config_.kernel_initializer, kernel_shape, config_.seed),
                  absl::StrCat(config_.name, "/kernel"));
  if (config_.use_bias) {
    bias_.emplace(Initialize(config_.bias_initializer,
                             Shape{kernel_shape.dim(kernel_shape.rank() - 1)}, config_.seed + 1),
                  absl::StrCat(config_.name, "/bias"));
  }
  for (autodiff::Variable* v : Variables()) v->set_frozen(!trainable_flag());
}

absl::StatusOr<Tensor> KernelLayer::Finish(const Tensor& y) {
  Tensor out = y;
  if (bias_) {
    SLUICE_ASSIGN_OR_RETURN(out, ops::Add(out, bias_->value()));  // [units] broadcasts
  }
  return Activate(config_.activation, out);
}

}  // namespace sluice::train::layers
