// The values of a host tensor as a vector, for comparing with gmock's matchers.
#ifndef SLUICE_TESTS_TENSOR_VALUES_H_
#define SLUICE_TESTS_TENSOR_VALUES_H_

#include <vector>

#include "core/tensor.h"

namespace sluice::testing {

template <typename T>
std::vector<T> Values(const Tensor& t) {
  auto f = t.flat<T>();
  return std::vector<T>(f.begin(), f.end());
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TENSOR_VALUES_H_
