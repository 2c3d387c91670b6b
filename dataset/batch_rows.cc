#include "dataset/batch_rows.h"

#include <utility>

namespace sluice {

BatchRows::BatchRows(int64_t batch, DType dtype, Shape row_shape)
    : batch_(batch),
      dtype_(dtype),
      row_bytes_(static_cast<size_t>(row_shape.num_elements()) * DTypeSize(dtype)),
      row_shape_(std::move(row_shape)),
      pool_(BufferPool::Create(2)) {}

absl::StatusOr<Tensor> BatchRows::Row(int64_t index) {
  const int64_t b = index / batch_, r = index % batch_;
  std::shared_ptr<Buffer> buffer;
  {
    MutexLock l(&mu_);
    Open& open = open_[b];
    if (open.buffer == nullptr) {
      open.buffer = pool_->Get(row_bytes_ * static_cast<size_t>(batch_));
      open.taken.assign(static_cast<size_t>(batch_), 0);
    }
    if (open.taken[static_cast<size_t>(r)]) return Tensor(dtype_, row_shape_);
    open.taken[static_cast<size_t>(r)] = 1;
    buffer = open.buffer;
    if (++open.rows == batch_) open_.erase(b);
    while (!open_.empty() && open_.begin()->first < b - kOpenBatches) open_.erase(open_.begin());
  }
  return Tensor::FromBuffer(dtype_, row_shape_, std::move(buffer),
                            static_cast<size_t>(r) * row_bytes_);
}

}  // namespace sluice
