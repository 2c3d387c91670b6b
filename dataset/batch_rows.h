#ifndef SLUICE_DATASET_BATCH_ROWS_H_
#define SLUICE_DATASET_BATCH_ROWS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/buffer_pool.h"
#include "core/dtype.h"
#include "core/mutex.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace sluice {

// Memory for a Map's results that a Batch right after it adopts instead of copying: Row(index)
// gives the Map's result for element `index` the memory of row index % batch of batch index /
// batch, so that Batch finds its rows already in place, back to back in one buffer, and makes
// that buffer the batch (dataset/batch.cc). That holds while the Map's element indices and the
// Batch's rows line up (deterministic order, no error or op in between); otherwise Batch copies,
// as always. Buffers come from a pool: a batch of 224x224 float images is 38 MB, a fresh mmap
// each time. Thread-safe. Two iterators of one pipeline share it and ask for the same indices: a
// row already handed out is not handed out again (the second gets memory of its own, and its
// Batch copies).
class BatchRows {
 public:
  BatchRows(int64_t batch, DType dtype, Shape row_shape);

  // A tensor of the row's dtype and shape in row index % batch of batch index / batch.
  absl::StatusOr<Tensor> Row(int64_t index);

 private:
  // Batches being filled whose buffer is kept: the Map runs a few elements ahead of Batch, and a
  // batch cut short by an error leaves its buffer behind.
  static constexpr int64_t kOpenBatches = 4;

  struct Open {
    std::shared_ptr<Buffer> buffer;
    std::vector<char> taken;  // by row
    int64_t rows = 0;         // handed out
  };

  const int64_t batch_;
  const DType dtype_;
  const size_t row_bytes_;
  const Shape row_shape_;
  std::shared_ptr<BufferPool> pool_;
  Mutex mu_;
  std::map<int64_t, Open> open_ ABSL_GUARDED_BY(mu_);  // by batch number
};

}  // namespace sluice

#endif  // SLUICE_DATASET_BATCH_ROWS_H_
