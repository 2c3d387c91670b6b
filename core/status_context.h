#ifndef SLUICE_CORE_STATUS_CONTEXT_H_
#define SLUICE_CORE_STATUS_CONTEXT_H_

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace sluice {

// `status` with the message `message` instead, keeping its code and its payloads (an OS error's
// errno, a Python exception). OK stays OK.
inline absl::Status WithMessage(const absl::Status& status, absl::string_view message) {
  if (status.ok()) return status;
  absl::Status out(status.code(), message);
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// `status` with `context` in front of its message, keeping its code and its payloads: errors from
// deep down name the caller's file, step or option ("Fit: epoch 2, step 7: ..."), and still say
// where they came from (the pipeline node, a Python function's exception).
inline absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return WithMessage(status, absl::StrCat(context, status.message()));
}

}  // namespace sluice

#endif  // SLUICE_CORE_STATUS_CONTEXT_H_
