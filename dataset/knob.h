#ifndef SLUICE_DATASET_KNOB_H_
#define SLUICE_DATASET_KNOB_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace sluice {

// A knob option as the user gives it: a count >= 1, or kAutotune (dataset/options.h).

// OK for a count >= 1 or kAutotune; otherwise InvalidArgument
// "<node>: <option> must be >= 1 or kAutotune, got <value>".
absl::Status CheckKnob(absl::string_view node, absl::string_view option, int64_t value);

// How Describe() prints a knob option: "autotune" or the count.
std::string KnobString(int64_t value);

}  // namespace sluice

#endif  // SLUICE_DATASET_KNOB_H_
