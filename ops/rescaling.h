#ifndef SLUICE_OPS_RESCALING_H_
#define SLUICE_OPS_RESCALING_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// keras.layers.Rescaling: x * scale + offset, for a uint8 or float32 tensor of any shape, as
// float32 (1/255 maps [0, 255] to [0, 1]; 1/127.5 with offset -1 to [-1, 1]). The multiply and
// the add round separately, as in Keras. (A JPEG pipeline can fuse this into its resize:
// NormalizeTable::Rescaling.)
class Rescaling {
 public:
  explicit Rescaling(float scale, float offset = 0.0f) : scale_(scale), offset_(offset) {}

  absl::StatusOr<Tensor> Apply(const Tensor& x) const;

 private:
  float scale_, offset_;
};

}  // namespace sluice

#endif  // SLUICE_OPS_RESCALING_H_
