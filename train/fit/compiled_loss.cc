#include "train/fit/compiled_loss.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/losses/sparse_categorical_crossentropy.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cross_entropy.h"

namespace sluice::train::fit {

CompiledLoss::CompiledLoss(std::shared_ptr<const losses::Loss> loss, layers::Module& model)
    : loss_(loss ? std::move(loss)
                 : std::make_shared<losses::SparseCategoricalCrossentropy>(
                       losses::SparseCategoricalCrossentropyOptions{.from_logits = true})),
      model_(model) {}

absl::Status CompiledLoss::CheckReduced(absl::string_view who) const {
  if (loss_->reduction() == losses::Reduction::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": the loss '", loss_->name(),
                     "' has reduction none (per-example values); training needs a scalar: use "
                     "kSumOverBatchSize (the default) or kSum"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> CompiledLoss::Compute(const Tensor& y_true, const Tensor& y_pred,
                                             std::string where) {
  ops::LabelRangeCheck label_check;
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, Compute(y_true, y_pred, label_check));
  label_checks_.Add(std::move(where), std::move(label_check));
  return loss;
}

absl::StatusOr<Tensor> CompiledLoss::Compute(const Tensor& y_true, const Tensor& y_pred,
                                             ops::LabelRangeCheck& label_check) {
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, (*loss_)(y_true, y_pred, &label_check));
  SLUICE_ASSIGN_OR_RETURN(std::optional<Tensor> penalty, RegularizationLoss());
  if (penalty) {
    SLUICE_ASSIGN_OR_RETURN(loss, ops::Add(loss, *penalty));
  }
  return loss;
}

absl::StatusOr<std::optional<Tensor>> CompiledLoss::RegularizationLoss() {
  std::vector<Tensor> penalties;
  SLUICE_RETURN_IF_ERROR(model_.AddLosses(penalties));
  if (penalties.empty()) return std::nullopt;
  Tensor total = penalties[0];
  for (size_t i = 1; i < penalties.size(); ++i) {
    SLUICE_ASSIGN_OR_RETURN(total, ops::Add(total, penalties[i]));
  }
  return total;
}

}  // namespace sluice::train::fit
