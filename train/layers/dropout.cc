#include "train/layers/dropout.h"

#include "absl/strings/str_cat.h"
#include "core/splitmix64.h"
#include "core/status_macros.h"
#include "train/backend/trace_hooks.h"
#include "train/layers/layer_seed.h"
#include "train/ops/dropout.h"

namespace sluice::train::layers {
namespace {

// splitmix64's finaliser: nearby (seed, count) pairs give unrelated seeds, so
// two Dropout layers with seeds s and s + 1 never share masks a step apart.
uint64_t Mix(uint64_t x) { return SplitMix64Finalize(x + kSplitMix64Golden); }

constexpr float kMaxExactCount = 16777216.0f;  // 2^24

}  // namespace

Dropout::Dropout(float rate, std::optional<uint64_t> seed)
    : rate_(rate),
      seed_(ResolveLayerSeed(seed)),
      calls_(Tensor::Scalar<float>(0), "dropout/calls", /*trainable=*/false) {
  // Read and written by the host on every call: the mask's seed is a host value.
  calls_.KeepOnHost();
}

absl::StatusOr<uint64_t> Dropout::NextSeed() {
  float& calls = calls_.mutable_value().data<float>()[0];
  if (calls >= kMaxExactCount) {
    return absl::OutOfRangeError(absl::StrCat(
        "Dropout: ", calls, " training calls, past the 2^24 a float32 counter holds exactly"));
  }
  const uint64_t seed = Mix(Mix(seed_) ^ static_cast<uint64_t>(calls));
  calls += 1;
  return seed;
}

absl::Status Dropout::CheckRate(float rate) {
  if (rate >= 0.0f && rate < 1.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("Dropout: rate must be in [0, 1), got ", rate));
}

absl::StatusOr<Tensor> Dropout::Forward(const Tensor& input, bool training) {
  SLUICE_RETURN_IF_ERROR(CheckRate(rate_));
  if (!training || rate_ == 0.0f) return input;
  SLUICE_ASSIGN_OR_RETURN(const uint64_t seed, NextSeed());
  backend::SetNextDropoutSeedSource([this] { return NextSeed(); });
  return ops::Dropout(input, {.rate = rate_, .seed = seed});
}

absl::StatusOr<LayerConfig> Dropout::GetConfig() {
  return LayerConfig{.class_name = "Dropout",
                     .ints = {{"seed", static_cast<int64_t>(seed_)}},
                     .floats = {{"rate", rate_}}};
}

}  // namespace sluice::train::layers
