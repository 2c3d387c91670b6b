#include "ops/normalize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/float16.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

template <typename T>
T FromFloat(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return T(v);
  }
}

// `lut` is the table's values in T: NormalizeTable::at(0) itself for float32.
template <typename T>
void Apply(const uint8_t* in, int64_t pixels, int channels, const T* lut, bool channels_first,
           T* out) {
  if (channels_first && channels == 3) {  // One pass over the input, three output streams.
    const T* t0 = lut;
    const T* t1 = t0 + 256;
    const T* t2 = t1 + 256;
    T* p0 = out;
    T* p1 = p0 + pixels;
    T* p2 = p1 + pixels;
    for (int64_t i = 0; i < pixels; ++i) {
      p0[i] = t0[in[3 * i]];
      p1[i] = t1[in[3 * i + 1]];
      p2[i] = t2[in[3 * i + 2]];
    }
    return;
  }
  if (channels_first) {
    for (int c = 0; c < channels; ++c) {
      const T* table = lut + c * 256;
      T* plane = out + static_cast<size_t>(c) * pixels;
      for (int64_t i = 0; i < pixels; ++i) plane[i] = table[in[i * channels + c]];
    }
    return;
  }
  if (channels == 3) {  // The common case, unrolled.
    const T* t0 = lut;
    const T* t1 = t0 + 256;
    const T* t2 = t1 + 256;
    for (int64_t i = 0; i < pixels; ++i) {
      out[3 * i] = t0[in[3 * i]];
      out[3 * i + 1] = t1[in[3 * i + 1]];
      out[3 * i + 2] = t2[in[3 * i + 2]];
    }
    return;
  }
  for (int64_t i = 0; i < pixels; ++i) {
    for (int c = 0; c < channels; ++c) out[i * channels + c] = lut[c * 256 + in[i * channels + c]];
  }
}

}  // namespace

absl::StatusOr<NormalizeTable> NormalizeTable::Create(int channels, absl::Span<const float> mean,
                                                      absl::Span<const float> stddev) {
  auto per_channel_ok = [&](absl::Span<const float> v) {
    return v.size() == 1 || v.size() == static_cast<size_t>(channels);
  };
  if (channels <= 0 || !per_channel_ok(mean) || !per_channel_ok(stddev)) {
    // "1 or 1" said nothing for a gray image given RGB statistics.
    return absl::InvalidArgumentError(
        absl::StrCat("Normalize: mean has ", mean.size(), " values and std ", stddev.size(),
                     " for an image of ", channels, channels == 1 ? " channel" : " channels",
                     ": each takes one value", channels > 1 ? absl::StrCat(" or ", channels) : ""));
  }
  NormalizeTable t;
  t.channels_ = channels;
  t.values_.resize(static_cast<size_t>(channels) * 256);
  for (int c = 0; c < channels; ++c) {
    const float m = mean[mean.size() == 1 ? 0 : c];
    const float s = stddev[stddev.size() == 1 ? 0 : c];
    if (s == 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat("Normalize: std of channel ", c, " is 0"));
    }
    for (int v = 0; v < 256; ++v) {
      const float x = static_cast<float>(v) / 255.0f;  // ToTensor
      t.values_[c * 256 + v] = (x - m) / s;            // Normalize
    }
  }
  return t;
}

NormalizeTable NormalizeTable::Rescaling(int channels, float scale, float offset) {
  NormalizeTable t;
  t.channels_ = channels;
  t.values_.resize(static_cast<size_t>(channels) * 256);
  for (int c = 0; c < channels; ++c) {
    for (int v = 0; v < 256; ++v) {
      // Two roundings, as Keras' multiply then add: volatile keeps the compiler from fusing them.
      volatile float scaled = static_cast<float>(v) * scale;
      t.values_[c * 256 + v] = scaled + offset;
    }
  }
  return t;
}

namespace {

// The table in T, rounded to nearest even from its float32 values.
template <typename T>
void ApplyRounded(const uint8_t* in, int64_t pixels, const NormalizeTable& table,
                  bool channels_first, T* out) {
  const int channels = table.channels();
  std::vector<T> lut(static_cast<size_t>(channels) * 256);
  for (size_t i = 0; i < lut.size(); ++i) lut[i] = FromFloat<T>(table.at(0)[i]);
  Apply<T>(in, pixels, channels, lut.data(), channels_first, out);
}

absl::Status CheckOutputDType(DType dtype) {
  if (dtype != DType::kFloat32 && dtype != DType::kBFloat16 && dtype != DType::kFloat16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Normalize: output dtype must be float32, bfloat16 or float16, got ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

absl::Status CheckImage(const Tensor& image) {
  if (image.dtype() != DType::kUint8 || image.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("Normalize: expected a uint8 [height, width, channels] image, got ",
                     DTypeName(image.dtype()), image.shape().DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckNormalizeArguments(absl::Span<const float> mean, absl::Span<const float> stddev,
                                     const NormalizeOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckOutputDType(options.dtype));
  if (mean.empty() || stddev.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("Normalize: mean has ", mean.size(),
                                                   " values and std ", stddev.size(),
                                                   ": each takes one value or one per channel"));
  }
  for (size_t c = 0; c < std::max(mean.size(), stddev.size()); ++c) {
    if (c < stddev.size() && stddev[c] == 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat("Normalize: std of channel ", c, " is 0"));
    }
    if ((c < stddev.size() && !std::isfinite(stddev[c])) ||
        (c < mean.size() && !std::isfinite(mean[c]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("Normalize: the mean and std of channel ", c, " must be finite"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Normalize(const Tensor& image, const NormalizeTable& table,
                                 const NormalizeOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckImage(image));
  SLUICE_RETURN_IF_ERROR(CheckOutputDType(options.dtype));
  const DType dtype = options.dtype;
  const int64_t h = image.dim(0), w = image.dim(1);
  const int channels = static_cast<int>(image.dim(2));
  if (channels != table.channels()) {
    return absl::InvalidArgumentError(absl::StrCat("Normalize: the image has ", channels,
                                                   " channels but the table was made for ",
                                                   table.channels()));
  }
  const Shape shape = options.channels_first ? Shape{channels, h, w} : Shape{h, w, channels};
  Tensor out(dtype, shape);
  const uint8_t* in = image.data<uint8_t>();
  const int64_t pixels = h * w;
  switch (dtype) {
    case DType::kFloat32:
      Apply<float>(in, pixels, channels, table.at(0), options.channels_first, out.data<float>());
      break;
    case DType::kBFloat16:
      ApplyRounded<BFloat16>(in, pixels, table, options.channels_first, out.data<BFloat16>());
      break;
    default:
      ApplyRounded<Float16>(in, pixels, table, options.channels_first, out.data<Float16>());
      break;
  }
  return out;
}

absl::StatusOr<Tensor> Normalize(const Tensor& image, absl::Span<const float> mean,
                                 absl::Span<const float> stddev, const NormalizeOptions& options) {
  SLUICE_RETURN_IF_ERROR(CheckImage(image));
  SLUICE_ASSIGN_OR_RETURN(const NormalizeTable table,
                          NormalizeTable::Create(static_cast<int>(image.dim(2)), mean, stddev));
  return Normalize(image, table, options);
}

}  // namespace sluice
