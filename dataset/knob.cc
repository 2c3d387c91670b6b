#include "dataset/knob.h"

#include "absl/strings/str_cat.h"
#include "dataset/options.h"

namespace sluice {

absl::Status CheckKnob(absl::string_view node, absl::string_view option, int64_t value) {
  if (value >= 1 || value == kAutotune) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(node, ": ", option, " must be >= 1 or AUTOTUNE (-1), got ", value));
}

std::string KnobString(int64_t value) {
  return value == kAutotune ? std::string("autotune") : absl::StrCat(value);
}

}  // namespace sluice
