#include "train/layers/initializers.h"

#include <cmath>
#include <numbers>
#include <random>

#include "absl/strings/str_cat.h"

namespace sluice::train::layers {
namespace {

// Uniform in [0, 1) from raw bits, identical on every standard library.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

std::pair<double, double> ComputeFans(const Shape& shape) {
  if (shape.rank() == 0) return {1, 1};
  if (shape.rank() == 1) return {double(shape.dim(0)), double(shape.dim(0))};
  double receptive = 1;
  for (int d = 0; d < shape.rank() - 2; ++d) receptive *= static_cast<double>(shape.dim(d));
  return {receptive * static_cast<double>(shape.dim(shape.rank() - 2)),
          receptive * static_cast<double>(shape.dim(shape.rank() - 1))};
}

Tensor Initialize(Initializer initializer, const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::Zeros(DType::kFloat32, shape);
  std::mt19937_64 rng(seed);
  const auto [fan_in, fan_out] = ComputeFans(shape);
  float* v = t.data<float>();
  switch (initializer) {
    case Initializer::kZeros:
      break;
    case Initializer::kGlorotUniform: {
      const double limit = std::sqrt(6.0 / (fan_in + fan_out));
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        v[i] = static_cast<float>((2 * Uniform(rng) - 1) * limit);
      }
      break;
    }
    case Initializer::kHeNormal: {
      // Keras divides by 0.8796..., the stddev of a unit normal truncated at
      // 2, so that the truncated values have the intended stddev.
      const double stddev = std::sqrt(2.0 / fan_in) / 0.87962566103423978;
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        double z;
        do {  // Box-Muller, redrawn outside [-2, 2]
          const double u1 = 1.0 - Uniform(rng), u2 = Uniform(rng);
          z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
        } while (std::abs(z) > 2);
        v[i] = static_cast<float>(z * stddev);
      }
      break;
    }
  }
  return t;
}

const char* InitializerName(Initializer initializer) {
  switch (initializer) {
    case Initializer::kZeros:
      return "zeros";
    case Initializer::kGlorotUniform:
      return "glorot_uniform";
    case Initializer::kHeNormal:
      return "he_normal";
  }
  return "?";
}

absl::StatusOr<Initializer> ParseInitializer(const std::string& name) {
  for (Initializer i : {Initializer::kZeros, Initializer::kGlorotUniform, Initializer::kHeNormal}) {
    if (name == InitializerName(i)) return i;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "initializer must be \"zeros\", \"glorot_uniform\" or \"he_normal\", not \"", name, "\""));
}

}  // namespace sluice::train::layers
