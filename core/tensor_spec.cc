#include "core/tensor_spec.h"

#include "absl/strings/str_cat.h"

namespace sluice {

std::string TensorSpec::DebugString() const {
  return absl::StrCat(DTypeName(dtype), shape.DebugString());
}

}  // namespace sluice
