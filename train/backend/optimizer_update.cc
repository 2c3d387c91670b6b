#include "train/backend/optimizer_update.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"

namespace sluice::train::backend {
bool UpdateUsesSlot(const UpdateRule& rule, int j) {
  switch (rule.kind) {
    case UpdateKind::kSgd:
      return j == 0 && rule.momentum != 0;
    case UpdateKind::kAdagrad:
      return j == 0;
    case UpdateKind::kRmsprop:
      return j == 0 || (j == 1 && rule.centered) || (j == 2 && rule.momentum != 0);
    case UpdateKind::kAdam:
    case UpdateKind::kAdadelta:
    case UpdateKind::kAdamax:
    case UpdateKind::kNadam:
      return j < 2;
  }
  return false;
}

const char* UpdateName(UpdateKind kind) {
  switch (kind) {
    case UpdateKind::kSgd:
      return "SgdUpdate";
    case UpdateKind::kAdam:
      return "AdamUpdate";
    case UpdateKind::kRmsprop:
      return "RmspropUpdate";
    case UpdateKind::kAdagrad:
      return "AdagradUpdate";
    case UpdateKind::kAdadelta:
      return "AdadeltaUpdate";
    case UpdateKind::kAdamax:
      return "AdamaxUpdate";
    case UpdateKind::kNadam:
      return "NadamUpdate";
  }
  return "OptimizerUpdate";
}

absl::Status CheckUpdate(const UpdateRule& rule, absl::Span<const UpdateOperands> vars,
                         const Tensor& step) {
  const char* name = UpdateName(rule.kind);
  // The step's dtype and shape once here; each operand's device (the step's) below.
  if (step.dtype() != DType::kFloat32 || step.shape() != Shape({kStepScalars})) {
    return CheckStepScalars(name, step, step);  // its message names what came
  }
  std::vector<const void*> seen;  // each variable's data, once
  for (size_t i = 0; i < vars.size(); ++i) {
    const UpdateOperands& var = vars[i];
    if (var.w == nullptr || var.g == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": variable ", i, " has no ",
                                                     var.w == nullptr ? "value" : "gradient"));
    }
    // One pass updates all of them at once: a variable listed twice would be written by two
    // threads (or GPU blocks) at the same time.
    if (var.w->num_elements() > 0 &&
        std::find(seen.begin(), seen.end(), var.w->raw_data()) != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": variable ", i, " is an earlier variable again"));
    }
    seen.push_back(var.w->raw_data());
    const int64_t n = var.w->num_elements();
    auto check = [&](const Tensor& t, absl::string_view what) -> absl::Status {
      if (t.dtype() != DType::kFloat32 || t.num_elements() != n || t.device() != step.device()) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, ": variable ", i, "'s ", what, " must be float32 with ", n, " elements on ",
            step.device().DebugString(), ", not ", DTypeName(t.dtype()), t.shape().DebugString(),
            " on ", t.device().DebugString()));
      }
      return absl::OkStatus();
    };
    SLUICE_RETURN_IF_ERROR(check(*var.w, "value"));
    SLUICE_RETURN_IF_ERROR(check(*var.g, "gradient"));
    for (int j = 0; j < kMaxUpdateSlots; ++j) {
      const bool used = UpdateUsesSlot(rule, j);
      if (used != (var.slots[j] != nullptr)) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": variable ", i, "'s slot ", j,
                                                       used ? " is missing" : " is not used",
                                                       " (backend/optimizer_update.h)"));
      }
      if (used) SLUICE_RETURN_IF_ERROR(check(*var.slots[j], absl::StrCat("slot ", j)));
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::backend
