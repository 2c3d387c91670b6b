#ifndef SLUICE_TRAIN_BACKEND_BATCH_NORM_ROWS_H_
#define SLUICE_TRAIN_BACKEND_BATCH_NORM_ROWS_H_

#include <cstdint>

#include "core/tensor.h"

namespace sluice::train::backend {

// x [.., C] as the rows [m, C] a backend's batch norm reduces over (channels innermost; a
// scalar is one channel).
struct BatchNormRows {
  int64_t m, c;
};
inline BatchNormRows BatchNormRowsOf(const Tensor& x) {
  const int64_t c = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  return {c == 0 ? 0 : x.num_elements() / c, c};
}

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_BATCH_NORM_ROWS_H_
