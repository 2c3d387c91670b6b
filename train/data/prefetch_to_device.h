#ifndef SLUICE_TRAIN_DATA_PREFETCH_TO_DEVICE_H_
#define SLUICE_TRAIN_DATA_PREFETCH_TO_DEVICE_H_

#include <cstdint>

#include "core/device.h"
#include "dataset/dataset.h"

namespace sluice::train::data {

// tf.data.experimental.prefetch_to_device: the last step of an input pipeline that feeds a
// model on `device`. A thread of its own pulls up to `buffer_size` elements ahead, stages each
// host tensor in memory the device copies from fastest (page-locked on CUDA) and starts its
// copy on the backend's copy queue (Backend::CopyAsync), so that the next batch crosses the
// bus while the current step computes. The consumer receives the device tensors and orders its
// kernels after their copies with Backend::WaitEvent, never waiting on the host.
//
// Bytes tensors and tensors already on `device` pass through unchanged. Errors keep their
// place in the order. Save copies the buffered elements back to the host, and Restore sends
// them to the device again, so a checkpoint resumes exactly. On the CPU it is a plain
// prefetch.
//
// Fit, Evaluate and Predict add it themselves when the model is not on the host.
// `buffer_size` must be >= 1: device memory is scarcer than host memory, so it is not tuned.
Dataset PrefetchToDevice(const Dataset& input, const Device& device, int64_t buffer_size = 2);

}  // namespace sluice::train::data

#endif  // SLUICE_TRAIN_DATA_PREFETCH_TO_DEVICE_H_
