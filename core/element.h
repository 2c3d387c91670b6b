#ifndef SLUICE_CORE_ELEMENT_H_
#define SLUICE_CORE_ELEMENT_H_

#include <string>
#include <vector>

#include "core/tensor.h"

namespace sluice {

// One item a dataset yields: a tuple of tensors (components), as in tf.data.
using Element = std::vector<Tensor>;

// Total bytes held by the element's components.
size_t ElementByteSize(const Element& element);
// Same number of components, each Equals() the other's.
bool ElementsEqual(const Element& a, const Element& b);
// "(int64[] {3}, bytes[] {"a"})".
std::string ElementDebugString(const Element& element, int max_values = 8);

}  // namespace sluice

#endif  // SLUICE_CORE_ELEMENT_H_
