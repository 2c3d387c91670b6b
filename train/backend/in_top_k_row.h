#ifndef SLUICE_TRAIN_BACKEND_IN_TOP_K_ROW_H_
#define SLUICE_TRAIN_BACKEND_IN_TOP_K_ROW_H_

// The per-row rules of Backend::InTopK and Backend::ArgMax, shared by the CPU kernel and the CUDA
// one (gpu/label_kernels.cu), so that both devices score a row the same way.
// Plain C++ with no dependencies: nvcc compiles it for the device.

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace sluice::train::backend {

// The index of the first maximum of `row` (c >= 1 scores), or of its first NaN: Backend::ArgMax.
SLUICE_HOST_DEVICE inline int64_t ArgMaxRow(const float* row, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c && row[best] == row[best]; ++j) {
    if (row[j] > row[best] || row[j] != row[j]) best = j;
  }
  return best;
}

// Whether `label` is a hit in `row` (c scores). tf.math.in_top_k: fewer than k
// classes score strictly above the label's and every score is finite. With
// `first_max_only`: the label is ArgMaxRow's index, so that accuracy is
// mean(argmax == label) as Keras computes it, NaN rows included. A label
// outside [0, c) is a miss.
SLUICE_HOST_DEVICE inline bool InTopKRow(const float* row, int64_t c, int64_t label, int k,
                                         bool first_max_only) {
  if (label < 0 || label >= c) return false;
  if (first_max_only) return ArgMaxRow(row, c) == label;
  bool finite = true;
  int64_t greater = 0;  // classes scoring strictly above the label's
  for (int64_t j = 0; j < c; ++j) {
    if (!std::isfinite(row[j])) finite = false;
    if (row[j] > row[label]) ++greater;
  }
  return finite && greater < k;
}

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_IN_TOP_K_ROW_H_
