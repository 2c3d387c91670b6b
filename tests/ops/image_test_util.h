#ifndef SLUICE_TESTS_OPS_IMAGE_TEST_UTIL_H_
#define SLUICE_TESTS_OPS_IMAGE_TEST_UTIL_H_

#include <turbojpeg.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"
#include "ops/resize.h"
#include "tests/file_util.h"

namespace sluice::testing {

// The three photos (JPEG, quality 90, 500x375 or 375x500) of the golden file images3.tfrecord.
// The TFRecord framing is walked here by hand (uint64 LE length, 4-byte CRC, data, 4-byte CRC)
// so that these tests do not depend on our own reader.
inline const std::vector<std::string>& PhotoJpegs() {
  static const std::vector<std::string>* jpegs = [] {
    auto* out = new std::vector<std::string>;
    // Appended rather than concatenated: GCC 12 warns (-Warray-bounds, wrongly) about the
    // temporary of operator+ when this lambda is inlined.
    std::string path = SLUICE_TEST_DATA;
    path += "/images3.tfrecord";
    const std::string file = ReadFile(path);
    size_t pos = 0;
    while (pos + 12 <= file.size()) {
      uint64_t length = 0;
      for (int i = 0; i < 8; ++i)
        length |= static_cast<uint64_t>(static_cast<uint8_t>(file[pos + i])) << (8 * i);
      pos += 12;
      if (pos + length + 4 > file.size()) break;
      proto::Example example;
      if (!example.ParseFromArray(file.data() + pos, static_cast<int>(length))) break;
      out->push_back(example.features().feature().at("image/encoded").bytes_list().value(0));
      pos += length + 4;
    }
    return out;
  }();
  return *jpegs;
}

// A uint8 HWC tensor from bytes.
inline Tensor ImageFromBytes(const std::vector<uint8_t>& bytes, int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUint8, Shape{h, w, c});
  std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

// TurboJPEG's own decoding, as the reference: pixel_format TJPF_RGB or TJPF_GRAY, scaled to
// scaled_w x scaled_h (0 = full size).
inline Tensor TurboDecode(const std::string& jpeg, int pixel_format, int scale_denom = 1,
                          int flags = TJFLAG_ACCURATEDCT) {
  tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  auto* data = reinterpret_cast<const unsigned char*>(jpeg.data());
  const unsigned long size = jpeg.size();
  EXPECT_EQ(tjDecompressHeader3(tj, data, size, &w, &h, &subsamp, &colorspace), 0);
  const int sw = (w + scale_denom - 1) / scale_denom, sh = (h + scale_denom - 1) / scale_denom;
  const int c = tjPixelSize[pixel_format];
  std::vector<uint8_t> pixels(static_cast<size_t>(sw) * sh * c);
  // One photo has padding before its EOI marker: TurboJPEG decodes it and reports a warning.
  if (tjDecompress2(tj, data, size, pixels.data(), sw, 0, sh, pixel_format, flags) != 0) {
    EXPECT_EQ(tjGetErrorCode(tj), TJERR_WARNING) << tjGetErrorStr2(tj);
  }
  tjDestroy(tj);
  return ImageFromBytes(pixels, sh, sw, c);
}

// Largest absolute difference between two uint8 tensors of the same shape (256 if the shapes
// differ).
// Resize that rounds a uint8 image back to uint8 (torchvision's semantics, what the decode ops
// return), over the whole image or a region; plain Resize gives float32 as tf.image.resize.
inline absl::StatusOr<Tensor> ResizeRounded(const Tensor& image, const ResizeRegion& region,
                                            int64_t out_h, int64_t out_w,
                                            ResizeMethod method = ResizeMethod::kBilinear) {
  return Resize(image, region, out_h, out_w, method, ResizeOutput{});
}
inline absl::StatusOr<Tensor> ResizeRounded(const Tensor& image, int64_t out_h, int64_t out_w,
                                            ResizeMethod method = ResizeMethod::kBilinear) {
  return ResizeRounded(image,
                       ResizeRegion{.height = static_cast<double>(image.dim(0)),
                                    .width = static_cast<double>(image.dim(1))},
                       out_h, out_w, method);
}

inline int MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != DType::kUint8 || b.dtype() != DType::kUint8) {
    return 256;
  }
  const uint8_t* p = a.data<uint8_t>();
  const uint8_t* q = b.data<uint8_t>();
  int worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) worst = std::max(worst, std::abs(p[i] - q[i]));
  return worst;
}

inline double MeanAbsDiff(const Tensor& a, const Tensor& b) {
  const uint8_t* p = a.data<uint8_t>();
  const uint8_t* q = b.data<uint8_t>();
  double total = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) total += std::abs(p[i] - q[i]);
  return total / static_cast<double>(a.num_elements());
}

// A uint8 image whose value at (y, x, c) is f(y, x, c).
template <typename F>
Tensor MakeImage(int64_t h, int64_t w, int64_t c, F f) {
  Tensor t(DType::kUint8, Shape{h, w, c});
  uint8_t* p = t.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t k = 0; k < c; ++k) p[(y * w + x) * c + k] = static_cast<uint8_t>(f(y, x, k));
    }
  }
  return t;
}

inline uint8_t At(const Tensor& t, int64_t y, int64_t x, int64_t c) {
  return t.data<uint8_t>()[(y * t.dim(1) + x) * t.dim(2) + c];
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_OPS_IMAGE_TEST_UTIL_H_
