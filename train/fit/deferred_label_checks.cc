#include "train/fit/deferred_label_checks.h"

#include <optional>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/transfer.h"

namespace sluice::train::fit {

void DeferredLabelChecks::Add(std::string context, ops::LabelRangeCheck check) {
  if (check.invalid_count() == nullptr) return;  // nothing deferred
  checks_.emplace_back(std::move(context), std::move(check));
}

absl::Status DeferredLabelChecks::CheckAll() {
  absl::Cleanup clear = [this] { checks_.clear(); };
  std::optional<Tensor> total;
  for (const auto& [context, check] : checks_) {
    const Tensor& count = *check.invalid_count();
    if (!total) {
      SLUICE_ASSIGN_OR_RETURN(total, backend::Clone(count));
      continue;
    }
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * b,
                            backend::BackendFor("DeferredLabelChecks", {&count, &*total}));
    SLUICE_RETURN_IF_ERROR(b->Axpby(1.0f, count, 1.0f, *total));
  }
  if (!total) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(float invalid, backend::ReadScalar(*total));
  if (invalid == 0) return absl::OkStatus();
  for (const auto& [context, check] : checks_) {
    absl::Status s = check.Check();
    if (!s.ok()) return WithContext(s, context);
  }
  return absl::InternalError(absl::StrCat("the device counted ", invalid,
                                          " labels out of range but no step's check finds one"));
}

}  // namespace sluice::train::fit
