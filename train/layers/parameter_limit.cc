#include "train/layers/parameter_limit.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace sluice::train::layers {
namespace {

thread_local ParameterLimit* current = nullptr;

}  // namespace

ParameterLimit::ParameterLimit(int64_t max_elements)
    : outer_(current), max_(max_elements), remaining_(max_elements) {
  current = this;
}

ParameterLimit::~ParameterLimit() { current = outer_; }

int64_t SaturatingProduct(absl::Span<const int64_t> dims) {
  int64_t product = 1;
  for (int64_t d : dims) {
    if (d <= 0) return 0;
    if (product > std::numeric_limits<int64_t>::max() / d) {
      return std::numeric_limits<int64_t>::max();
    }
    product *= d;
  }
  return product;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}

absl::Status CheckParameters(absl::string_view layer, int64_t elements) {
  if (current == nullptr || elements <= current->remaining_) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      layer, " asks for ", elements, " more variable elements, over the limit of ", current->max_,
      " (", current->remaining_, " left); a saved model's limit is what its weights file holds"));
}

absl::Status ReserveParameters(absl::string_view layer, int64_t elements) {
  if (absl::Status s = CheckParameters(layer, elements); !s.ok()) return s;
  if (current != nullptr) current->remaining_ -= elements;
  return absl::OkStatus();
}

}  // namespace sluice::train::layers
