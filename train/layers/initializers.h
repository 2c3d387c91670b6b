#ifndef SLUICE_TRAIN_LAYERS_INITIALIZERS_H_
#define SLUICE_TRAIN_LAYERS_INITIALIZERS_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice::train::layers {

// Keras' weight initializers, float32 and seeded (the same seed and shape
// give the same values).
enum class Initializer {
  kZeros,
  kGlorotUniform,  // U(-l, l), l = sqrt(6 / (fan_in + fan_out))
  kHeNormal,       // normal with stddev sqrt(2 / fan_in), truncated at 2 stddev
};

// (fan_in, fan_out) as Keras computes them: [in, out] for a Dense kernel,
// [kh, kw, in, out] for a Conv2D kernel (times the receptive field).
std::pair<double, double> ComputeFans(const Shape& shape);

Tensor Initialize(Initializer initializer, const Shape& shape, uint64_t seed = 0);

// Keras' names, "zeros", "glorot_uniform" and "he_normal", and back (InvalidArgument for another).
const char* InitializerName(Initializer initializer);
absl::StatusOr<Initializer> ParseInitializer(const std::string& name);

}  // namespace sluice::train::layers

#endif  // SLUICE_TRAIN_LAYERS_INITIALIZERS_H_
