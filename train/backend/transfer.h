#ifndef SLUICE_TRAIN_BACKEND_TRANSFER_H_
#define SLUICE_TRAIN_BACKEND_TRANSFER_H_

#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/element.h"
#include "core/tensor.h"

namespace sluice::train::backend {

// Explicit copies between devices, through the backends, so that code above
// the Backend interface never reads tensor memory itself. Each returns once
// the copy's destination may be used: on the host, once the values are there.

// A new tensor on `device` with `t`'s dtype, shape and values.
absl::StatusOr<Tensor> CopyTo(const Tensor& t, const Device& device);
// Copies `src` into `dst` (same dtype and element count), each on any device.
absl::Status CopyInto(const Tensor& src, Tensor& dst);
// A deep copy on `t`'s own device.
absl::StatusOr<Tensor> Clone(const Tensor& t);
// `t` itself when it is on the host, else a host copy.
absl::StatusOr<Tensor> ToHost(const Tensor& t);
// The single value of a float32 tensor of one element, wherever it lives.
absl::StatusOr<float> ReadScalar(const Tensor& t);

// Elements (a batch, a prefetched element): every tensor on the host; or the numeric host tensors
// from index `first` on copied to `device`, while bytes tensors, the ones before `first` and the
// ones already off the host stay as they are.
absl::StatusOr<Element> ElementToHost(Element element);
// Whether ElementToDevice copies `t`: a numeric tensor on the host.
bool MovesToDevice(const Tensor& t);
absl::StatusOr<Element> ElementToDevice(Element element, const Device& device, size_t first = 0);

}  // namespace sluice::train::backend

#endif  // SLUICE_TRAIN_BACKEND_TRANSFER_H_
