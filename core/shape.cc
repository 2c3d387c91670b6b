#include "core/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

absl::StatusOr<Shape> Shape::FromUntrustedDims(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape [", absl::StrJoin(dims, ", "), "] has a negative dimension"));
    }
    if (d != 0 && n > kMaxElements / d) {
      // Zeros are skipped: [2^40, 2^40, 0] holds nothing, but a slice of it would not.
      return absl::InvalidArgumentError(
          absl::StrCat("shape [", absl::StrJoin(dims, ", "), "] has more than 2^59 elements"));
    }
    n = d == 0 ? n : n * d;
  }
  return Shape(dims);
}

std::string Shape::DebugString() const {
  return absl::StrCat("[", absl::StrJoin(dims_, ", "), "]");
}

}  // namespace sluice
