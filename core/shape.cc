#include "core/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {

std::string Shape::DebugString() const {
  return absl::StrCat("[", absl::StrJoin(dims_, ", "), "]");
}

}  // namespace sluice
