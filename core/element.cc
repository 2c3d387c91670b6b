#include "core/element.h"

#include "absl/strings/str_cat.h"

namespace sluice {

size_t ElementByteSize(const Element& element) {
  size_t total = 0;
  for (const Tensor& t : element) total += t.byte_size();
  return total;
}

bool ElementsEqual(const Element& a, const Element& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].Equals(b[i])) return false;
  }
  return true;
}

std::string ElementDebugString(const Element& element, int max_values) {
  std::string out = "(";
  for (size_t i = 0; i < element.size(); ++i) {
    if (i > 0) out.append(", ");
    out.append(element[i].DebugString(max_values));
  }
  out.append(")");
  return out;
}

}  // namespace sluice
