#ifndef SLUICE_TRAIN_LAYERS_PARAMETER_LIMIT_H_
#define SLUICE_TRAIN_LAYERS_PARAMETER_LIMIT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace sluice::train::layers {

// While a ParameterLimit lives on a thread, the built-in layers made or built on that thread
// create at most `max_elements` variable elements in all, and a layer that would pass it fails
// (ResourceExhausted, naming the layer) before allocating anything. LoadModel sets it to what
// the weights file holds: a crafted architecture (a Dense of 2^40 units) is an error, not
// terabytes of allocation before its weights are checked. Limits nest; the innermost counts.
class ParameterLimit {
 public:
  explicit ParameterLimit(int64_t max_elements);
  ~ParameterLimit();
  ParameterLimit(const ParameterLimit&) = delete;
  ParameterLimit& operator=(const ParameterLimit&) = delete;

  int64_t remaining() const { return remaining_; }

 private:
  friend absl::Status CheckParameters(absl::string_view layer, int64_t elements);
  friend absl::Status ReserveParameters(absl::string_view layer, int64_t elements);
  ParameterLimit* outer_;
  int64_t max_;
  int64_t remaining_;
};

// The product of untrusted dimensions, INT64_MAX when it overflows (a negative one counts as 0).
int64_t SaturatingProduct(absl::Span<const int64_t> dims);
// a + b, INT64_MAX when it overflows (both >= 0).
int64_t SaturatingAdd(int64_t a, int64_t b);

// Whether `elements` more fit under the thread's limit (OK when there is none), without taking
// them: for a layer that builds its parts (which reserve) in its constructor.
absl::Status CheckParameters(absl::string_view layer, int64_t elements);
// Checks, then takes them from the limit: call before allocating variables.
absl::Status ReserveParameters(absl::string_view layer, int64_t elements);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_PARAMETER_LIMIT_H_
