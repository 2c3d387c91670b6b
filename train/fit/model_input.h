#ifndef SLUICE_TRAIN_FIT_MODEL_INPUT_H_
#define SLUICE_TRAIN_FIT_MODEL_INPUT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"
#include "core/element.h"
#include "core/tensor.h"
#include "dataset/dataset.h"

namespace sluice::train::fit {

// What Fit, Evaluate and Predict take from their datasets: elements {inputs float32 [B, ...],
// targets [B, ...]} (Predict: {inputs} will do), starting at index `first` (Fit's pass index
// comes before them). InvalidArgument naming `who` and saying what to change otherwise.
absl::Status CheckModelInput(absl::string_view who, const Element& e, size_t first,
                             bool need_targets);

// What Predict concatenates: float32 [B, ...] with the inner shape of `first` (the first
// batch's prediction; nullptr for the first batch itself). InvalidArgument naming `who`.
absl::Status CheckPrediction(absl::string_view who, const Tensor& prediction, const Tensor* first);

// `batch` with its tensors from index `first` on copied to `device` (those that
// PrefetchToDevice already put there pass through).
absl::StatusOr<Element> ToModelDevice(const Element& batch, const Device& device, size_t first);

// `data` with its batches copied `ahead` batches ahead to `device`, when that is not the host
// and `ahead` > 0 (data::PrefetchToDevice).
Dataset OnModelDevice(const Dataset& data, const Device& device, int64_t ahead);

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_MODEL_INPUT_H_
