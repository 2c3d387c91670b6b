#ifndef SLUICE_OPS_NORMALIZE_H_
#define SLUICE_OPS_NORMALIZE_H_

#include <array>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/dtype.h"
#include "core/tensor.h"

namespace sluice {

// The ImageNet channel statistics torchvision's models are trained with (RGB, on [0, 1] values).
inline constexpr std::array<float, 3> kImageNetMean = {0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImageNetStd = {0.229f, 0.224f, 0.225f};

struct NormalizeOptions {
  // kFloat32, kBFloat16 or kFloat16.
  DType dtype = DType::kFloat32;
  // Write [channels, height, width] (CHW, what PyTorch models take) instead of the input's
  // [height, width, channels] (HWC, what TensorFlow models take).
  bool channels_first = false;
};

// Normalize's arithmetic for every uint8 value of every channel: at(c)[v] = (v / 255 - mean[c]) /
// std[c], each step rounded to float32. Resize uses it to normalize while it writes its output.
class NormalizeTable {
 public:
  // `mean` and `stddev` have one value per channel, or one value for all channels; stddev must
  // not be 0.
  static absl::StatusOr<NormalizeTable> Create(int channels, absl::Span<const float> mean,
                                               absl::Span<const float> stddev);
  // at(c)[v] = v * scale + offset in float32, as Keras' Rescaling layer computes it: scale 1 and
  // offset 0 give the uint8 values as floats (what image_dataset_from_directory yields), 1/255
  // gives [0, 1], 1/127.5 and offset -1 give [-1, 1].
  static NormalizeTable Rescaling(int channels, float scale = 1.0f, float offset = 0.0f);

  int channels() const { return channels_; }
  // The 256 values of channel c.
  const float* at(int c) const { return values_.data() + static_cast<size_t>(c) * 256; }

 private:
  int channels_ = 0;
  std::vector<float> values_;
};

// What Normalize refuses whatever the image: an output dtype other than float32, bfloat16 or
// float16, an empty mean or stddev, a stddev of 0 (InvalidArgument). The channel count is checked
// against the image's. Bindings that build the op once check it there, not at every element.
absl::Status CheckNormalizeArguments(absl::Span<const float> mean, absl::Span<const float> stddev,
                                     const NormalizeOptions& options);

// Converts a uint8 [height, width, channels] image to floating point as torchvision's
// ToTensor() followed by Normalize(mean, std) does: y = (x / 255 - mean[c]) / std[c], each step
// rounded to float32 in that order, so float32 results are bitwise what torchvision computes;
// bfloat16 and float16 results are those float32 values rounded to nearest even. (The values come
// from a 256-entry table per channel, which is also the fast way to compute them.) `mean` and
// `stddev` have one value per channel, or one value for all channels; stddev must not be 0.
absl::StatusOr<Tensor> Normalize(const Tensor& image, absl::Span<const float> mean,
                                 absl::Span<const float> stddev,
                                 const NormalizeOptions& options = {});
// The same with a table made once (NormalizeTable::Create) for `image`'s channel count: a
// pipeline normalizing many small images saves making the table for each (on 28x28 images that
// took as long as normalizing them).
absl::StatusOr<Tensor> Normalize(const Tensor& image, const NormalizeTable& table,
                                 const NormalizeOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_OPS_NORMALIZE_H_
