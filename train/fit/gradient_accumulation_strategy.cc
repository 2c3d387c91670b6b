#include "train/fit/gradient_accumulation_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/transfer.h"

namespace sluice::train::fit {

absl::Status GradientAccumulationStrategy::ApplyGradients(
    std::vector<std::optional<Tensor>> grads, const std::vector<autodiff::Variable*>& vars) {
  if (restored_steps_ > 0) SLUICE_RETURN_IF_ERROR(TakeRestored(vars));
  if (accumulated_ == 0) {
    names_.clear();
    for (const autodiff::Variable* v : vars) names_.push_back(v->name());
  }
  SLUICE_RETURN_IF_ERROR(accumulator_.Add(grads));
  ++accumulated_;
  if (!accumulator_.ready()) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> mean, accumulator_.Average());
  SLUICE_RETURN_IF_ERROR(inner().ApplyGradients(std::move(mean), vars));
  accumulated_ = 0;
  return absl::OkStatus();
}

absl::Status GradientAccumulationStrategy::SaveState(RankPosition& position) const {
  SLUICE_RETURN_IF_ERROR(WrappingStrategy::SaveState(position));
  if (restored_steps_ > 0) {  // restored, and saved again before any step took the sums
    position.accumulated_steps = restored_steps_;
    position.accumulation_steps = accumulator_.steps();
    position.accumulated_gradients = restored_sums_;
    return absl::OkStatus();
  }
  if (accumulated_ == 0) return absl::OkStatus();
  const std::vector<std::optional<Tensor>>& sums = accumulator_.sums();
  if (sums.size() != names_.size()) {
    return absl::InternalError(absl::StrCat("gradient accumulation: ", sums.size(), " sums for ",
                                            names_.size(), " variables"));
  }
  position.accumulated_steps = accumulated_;
  position.accumulation_steps = accumulator_.steps();
  for (size_t i = 0; i < sums.size(); ++i) {
    if (!sums[i]) continue;
    SLUICE_ASSIGN_OR_RETURN(Tensor host, backend::ToHost(*sums[i]));
    position.accumulated_gradients.emplace_back(names_[i], std::move(host));
  }
  return absl::OkStatus();
}

absl::Status GradientAccumulationStrategy::RestoreState(const RankPosition& position,
                                                        absl::string_view where) {
  if (position.accumulated_steps == 0) return WrappingStrategy::RestoreState(position, where);
  if (position.accumulation_steps != accumulator_.steps()) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": holds the gradients of ", position.accumulated_steps, " of ",
        position.accumulation_steps, " accumulated micro-batches, but this run accumulates ",
        accumulator_.steps(), ": resume with accumulation_steps ", position.accumulation_steps,
        " (sluice train --accumulate ", position.accumulation_steps, ")"));
  }
  RankPosition rest;  // what the inner strategies see: nothing accumulated
  SLUICE_RETURN_IF_ERROR(WrappingStrategy::RestoreState(rest, where));
  restored_steps_ = static_cast<int>(position.accumulated_steps);
  restored_sums_ = position.accumulated_gradients;
  restored_from_ = std::string(where);
  return absl::OkStatus();
}

absl::Status GradientAccumulationStrategy::TakeRestored(
    const std::vector<autodiff::Variable*>& vars) {
  std::vector<std::optional<Tensor>> sums(vars.size());
  size_t matched = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    for (const auto& [name, sum] : restored_sums_) {
      if (name != vars[i]->name()) continue;
      const Tensor& value = vars[i]->value();
      if (sum.shape() != value.shape()) {
        return absl::DataLossError(absl::StrCat(restored_from_, ": the accumulated gradient of ",
                                                name, " is ", sum.shape().DebugString(),
                                                ", the variable ", value.shape().DebugString()));
      }
      // A copy on the variable's device: the sum is added to in place.
      SLUICE_ASSIGN_OR_RETURN(sums[i], value.device().is_cpu()
                                           ? backend::Clone(sum)
                                           : backend::CopyTo(sum, value.device()));
      ++matched;
      break;
    }
  }
  if (matched != restored_sums_.size()) {
    return absl::DataLossError(
        absl::StrCat(restored_from_, ": ", restored_sums_.size() - matched,
                     " accumulated gradients belong to no variable the step trains"));
  }
  SLUICE_RETURN_IF_ERROR(accumulator_.Restore(restored_steps_, std::move(sums)));
  accumulated_ = restored_steps_;
  names_.clear();
  for (const autodiff::Variable* v : vars) names_.push_back(v->name());
  restored_steps_ = 0;
  restored_sums_.clear();
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
