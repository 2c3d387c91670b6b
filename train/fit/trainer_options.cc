#include "train/fit/trainer_options.h"

#include "absl/strings/str_cat.h"

namespace sluice::train::fit {

absl::Status CheckFitOptions(const FitOptions& options) {
  if (options.epochs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: epochs must be >= 0, got ", options.epochs));
  }
  if (options.steps_per_epoch && *options.steps_per_epoch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: steps_per_epoch must be >= 1, got ", *options.steps_per_epoch));
  }
  if (options.profile_steps && (options.profile_steps->first < 1 ||
                                options.profile_steps->second < options.profile_steps->first ||
                                options.profile_dir.empty())) {
    return absl::InvalidArgumentError(
        "Fit: profile_steps must be {from, to} with 1 <= from <= to (global steps, 1-based) and "
        "a profile_dir");
  }
  if (options.accumulation_steps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fit: accumulation_steps must be >= 1, got ", options.accumulation_steps));
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
