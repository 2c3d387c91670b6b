#include "ops/image_transform.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "ops/augmentation.h"

namespace sluice {
namespace {

// TensorFlow's MapCoordinate for each fill mode (image_ops.h), in float as there.
float MapCoordinate(float in, int64_t len, FillMode mode) {
  const float last = static_cast<float>(len - 1);
  switch (mode) {
    case FillMode::kReflect:
      if (in < 0) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz2 = 2 * len;
          if (in < static_cast<float>(sz2)) {
            in = static_cast<float>(sz2) * static_cast<float>(static_cast<int64_t>(-in / sz2)) + in;
          }
          in = in < static_cast<float>(-len) ? in + static_cast<float>(sz2) : -in - 1;
        }
      } else if (in > last) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz2 = 2 * len;
          in -= static_cast<float>(sz2) * static_cast<float>(static_cast<int64_t>(in / sz2));
          if (in >= static_cast<float>(len)) in = static_cast<float>(sz2) - in - 1;
        }
      }
      return std::clamp(in, 0.0f, last);
    case FillMode::kWrap:
      if (in < 0) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz = len - 1;
          in += static_cast<float>(len) * static_cast<float>(static_cast<int64_t>(-in / sz) + 1);
        }
      } else if (in > last) {
        if (len <= 1) {
          in = 0;
        } else {
          const int64_t sz = len - 1;
          in -= static_cast<float>(len) * static_cast<float>(static_cast<int64_t>(in / sz));
        }
      }
      return std::clamp(in, 0.0f, last);
    case FillMode::kConstant:
      return in;
    case FillMode::kNearest:
      return std::clamp(in, 0.0f, last);
  }
  return in;
}

class Sampler {
 public:
  Sampler(const float* image, int64_t height, int64_t width, int64_t channels, float fill)
      : image_(image), height_(height), width_(width), channels_(channels), fill_(fill) {}

  float Read(int64_t y, int64_t x, int64_t c) const {
    if (y < 0 || y >= height_ || x < 0 || x >= width_) return fill_;
    return image_[(y * width_ + x) * channels_ + c];
  }
  float Nearest(float y, float x, int64_t c) const {
    return Read(static_cast<int64_t>(std::round(y)), static_cast<int64_t>(std::round(x)), c);
  }
  float Bilinear(float y, float x, int64_t c) const {
    const float y0 = std::floor(y), x0 = std::floor(x);
    const float y1 = y0 + 1, x1 = x0 + 1;
    const int64_t iy0 = static_cast<int64_t>(y0), ix0 = static_cast<int64_t>(x0);
    const float top = (x1 - x) * Read(iy0, ix0, c) + (x - x0) * Read(iy0, ix0 + 1, c);
    const float bottom = (x1 - x) * Read(iy0 + 1, ix0, c) + (x - x0) * Read(iy0 + 1, ix0 + 1, c);
    return (y1 - y) * top + (y - y0) * bottom;
  }

 private:
  const float* image_;
  int64_t height_, width_, channels_;
  float fill_;
};

}  // namespace

absl::StatusOr<Tensor> ImageProjectiveTransform(const Tensor& images,
                                                absl::Span<const ProjectiveTransform> transforms,
                                                const ImageTransformOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const ImageBatchShape s,
                          FloatImageBatchShape(images, "ImageProjectiveTransform"));
  if (static_cast<int64_t>(transforms.size()) != s.batch) {
    return absl::InvalidArgumentError(absl::StrCat("ImageProjectiveTransform: ", transforms.size(),
                                                   " transforms for ", s.batch, " images"));
  }
  Tensor out(DType::kFloat32, images.shape());
  const int64_t image_size = s.height * s.width * s.channels;
  for (int64_t b = 0; b < s.batch; ++b) {
    const Sampler sampler(images.data<float>() + b * image_size, s.height, s.width, s.channels,
                          options.fill_value);
    // TensorFlow reads the transform as float32; so does this, for the same samples.
    std::array<float, 8> t;
    for (int i = 0; i < 8; ++i) t[i] = static_cast<float>(transforms[b][i]);
    float* dst = out.data<float>() + b * image_size;
    for (int64_t y = 0; y < s.height; ++y) {
      for (int64_t x = 0; x < s.width; ++x) {
        const float fx = static_cast<float>(x), fy = static_cast<float>(y);
        const float k = t[6] * fx + t[7] * fy + 1;
        float* pixel = dst + (y * s.width + x) * s.channels;
        if (k == 0) {
          std::fill(pixel, pixel + s.channels, options.fill_value);
          continue;
        }
        const float in_x =
            MapCoordinate((t[0] * fx + t[1] * fy + t[2]) / k, s.width, options.fill_mode);
        const float in_y =
            MapCoordinate((t[3] * fx + t[4] * fy + t[5]) / k, s.height, options.fill_mode);
        for (int64_t c = 0; c < s.channels; ++c) {
          pixel[c] = options.interpolation == Interpolation::kNearest
                         ? sampler.Nearest(in_y, in_x, c)
                         : sampler.Bilinear(in_y, in_x, c);
        }
      }
    }
  }
  return out;
}

ProjectiveTransform RotationTransform(double angle, int64_t height, int64_t width) {
  const double c = std::cos(angle), s = std::sin(angle);
  const double h = static_cast<double>(height - 1), w = static_cast<double>(width - 1);
  const double x_offset = (w - (c * w - s * h)) / 2;
  const double y_offset = (h - (s * w + c * h)) / 2;
  return {c, -s, x_offset, s, c, y_offset, 0, 0};
}

ProjectiveTransform ZoomTransform(double zoom_y, double zoom_x, int64_t height, int64_t width) {
  const double x_offset = (static_cast<double>(width) - 1) / 2 * (1 - zoom_x);
  const double y_offset = (static_cast<double>(height) - 1) / 2 * (1 - zoom_y);
  return {zoom_x, 0, x_offset, 0, zoom_y, y_offset, 0, 0};
}

ProjectiveTransform TranslationTransform(double dy, double dx) {
  return {1, 0, -dx, 0, 1, -dy, 0, 0};
}

}  // namespace sluice
