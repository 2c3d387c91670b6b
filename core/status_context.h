#ifndef SLUICE_CORE_STATUS_CONTEXT_H_
#define SLUICE_CORE_STATUS_CONTEXT_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sluice {

// `status` with `context` in front of its message, keeping its code: errors from deep down name
// the caller's file, step or option ("Fit: epoch 2, step 7: ...").
inline absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, status.message()));
}

}  // namespace sluice

#endif  // SLUICE_CORE_STATUS_CONTEXT_H_
