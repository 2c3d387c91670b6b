// libFuzzer target: JPEG header reading and decoding, whole, with a crop window, with DCT scaling,
// and the fused DecodeAndRandomResizedCrop. Four leading bytes pick the options and the window.
// A windowed decode must equal the same window of a whole decode whenever both succeed and
// libjpeg reads the JPEG without a warning. (With corrupt data that libjpeg recovers from, in
// particular a progressive JPEG whose scans are incomplete, libjpeg-turbo's inter-block smoothing
// of a decode that skips rows differs from a whole decode by a few levels; docs/reliability.md,
// "Findings".)
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes small JPEGs of every kind it should
// read into DIR (the seed corpus), encoded with libjpeg directly: baseline 4:2:0 and 4:4:4,
// grayscale, progressive, with restart markers, CMYK, and odd sizes.
//
// max_pixels is 2^24 here rather than the default 2^28, so that the fuzzer spends its time on
// parsing rather than on filling a 768 MB image; the default's own check is a unit test
// (tests/ops/decode_jpeg_test.cc).

#include <csetjmp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// After <cstdio>: jpeglib.h uses size_t and FILE without including them.
#include <jpeglib.h>

#include "core/tensor.h"
#include "ops/crop.h"
#include "ops/decode_jpeg.h"
#include "ops/jpeg_error_manager.h"
#include "ops/random_resized_crop.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/libjpeg_encode.h"

namespace sluice {
namespace {

using fuzz::Check;

constexpr int64_t kMaxPixels = int64_t{1} << 24;

struct SeedKind {
  const char* name;
  int width, height, components;
  J_COLOR_SPACE space;
  bool progressive;
  int restart_rows;
  bool subsample;  // 4:2:0 chroma, else 4:4:4
};

// A width x height image (a gradient with a little texture) as a JPEG, by libjpeg.
std::string EncodeSeed(const SeedKind& k) {
  return testing::EncodeWithLibjpeg(
      {.width = k.width,
       .height = k.height,
       .components = k.components,
       .in_space = k.space,
       .progressive = k.progressive,
       .restart_rows = k.restart_rows,
       .subsample = k.subsample},
      [&k](int x, int y, int ch) {
        return (x * 255 / k.width + y * 7 * (ch + 1) + ((x ^ y) & 8)) & 255;
      });
}

// Whether libjpeg decodes `jpeg` whole without an error or a warning (corrupt data it recovered
// from).
bool CleanForLibjpeg(absl::string_view jpeg) {
  // Errors and truncation longjmp back here; other warnings are counted in num_warnings.
  JpegErrorManager err;
  jpeg_decompress_struct d;
  d.err = InitJpegErrorManager(&err);
  jpeg_create_decompress(&d);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&d);
    return false;
  }
  jpeg_mem_src(&d, reinterpret_cast<const unsigned char*>(jpeg.data()),
               static_cast<unsigned long>(jpeg.size()));
  jpeg_read_header(&d, TRUE);
  jpeg_start_decompress(&d);
  // Static: a longjmp out of this function must not skip a destructor.
  static auto* row = new std::vector<unsigned char>;
  row->resize(static_cast<size_t>(d.output_width) * d.output_components);
  while (d.output_scanline < d.output_height) {
    JSAMPROW rows[1] = {row->data()};
    jpeg_read_scanlines(&d, rows, 1);
  }
  jpeg_finish_decompress(&d);
  const bool clean = err.pub.num_warnings == 0;
  jpeg_destroy_decompress(&d);
  return clean;
}

void WriteSeeds(const std::string& dir) {
  static constexpr SeedKind kKinds[] = {
      {"rgb420", 24, 17, 3, JCS_RGB, false, 0, true},
      {"rgb444", 16, 16, 3, JCS_RGB, false, 0, false},
      {"gray", 13, 9, 1, JCS_GRAYSCALE, false, 0, false},
      {"progressive", 40, 24, 3, JCS_RGB, true, 0, true},
      {"restart", 32, 32, 3, JCS_RGB, false, 1, true},
      {"cmyk", 8, 8, 4, JCS_CMYK, false, 0, false},
      {"wide", 67, 3, 3, JCS_RGB, false, 0, true},
  };
  // The four option bytes in front: {mode, a, b, c}; modes that decode whole, windowed, covering
  // and through DecodeAndRandomResizedCrop, at several scales and channel counts.
  static constexpr unsigned char kModes[][4] = {{0x00, 0, 0, 0},
                                                {0x46, 3, 2, 0x21},
                                                {0x85, 1, 5, 0x12},
                                                {0x8a, 2, 3, 0x11},
                                                {0xc7, 30, 20, 9}};
  int i = 0;
  for (const SeedKind& k : kKinds) {
    const std::string jpeg = EncodeSeed(k);
    const unsigned char* m = kModes[i++ % 5];
    const std::string path = dir + "/" + k.name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) std::abort();
    std::fwrite(m, 1, 4, f);
    std::fwrite(jpeg.data(), 1, jpeg.size(), f);
    std::fclose(f);
  }
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("SLUICE_FUZZ_SEEDS")) sluice::WriteSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  if (size < 4) return 0;
  const uint8_t mode = data[0];
  const uint8_t a = data[1], b = data[2], c = data[3];
  const absl::string_view jpeg(reinterpret_cast<const char*>(data) + 4, size - 4);

  absl::StatusOr<JpegHeader> header = ReadJpegHeader(jpeg);
  DecodeJpegOptions options;
  options.max_pixels = kMaxPixels;
  static constexpr int kChannels[4] = {0, 1, 3, 3};
  options.channels = kChannels[mode & 3];
  options.scale_denom = 1 << ((mode >> 2) & 3);
  options.fast_dct = (mode & 16) != 0;
  const int what = mode >> 5;  // 0-7

  if (what >= 6) {  // The fused augmentation.
    RandomResizedCropOptions rrc;
    rrc.max_pixels = kMaxPixels;
    rrc.channels = kChannels[mode & 3] == 1 ? 1 : 3;
    rrc.dct_scaling = (mode & 4) != 0;
    rrc.fast_dct = options.fast_dct;
    const int64_t out_h = 1 + a % 48, out_w = 1 + b % 48;
    absl::StatusOr<Tensor> out = DecodeAndRandomResizedCrop(jpeg, out_h, out_w, c, rrc);
    if (out.ok()) {
      Check(out->dtype() == DType::kUint8 && out->rank() == 3 && out->dim(0) == out_h &&
            out->dim(1) == out_w && out->dim(2) == rrc.channels);
      Check(header.ok());
    }
    return 0;
  }
  if (!header.ok()) {
    Check(!DecodeJpeg(jpeg, options).ok());
    return 0;
  }
  const int64_t h = JpegScaledSize(header->height, options.scale_denom);
  const int64_t w = JpegScaledSize(header->width, options.scale_denom);
  if (what < 2) {  // The whole image.
    absl::StatusOr<Tensor> image = DecodeJpeg(jpeg, options);
    if (image.ok()) {
      const int channels = options.channels == 0 ? header->channels : options.channels;
      Check(image->rank() == 3 && image->dim(0) == h && image->dim(1) == w &&
            image->dim(2) == channels);
    }
    return 0;
  }
  // A window inside the scaled image (a, b, c place it; some windows are empty or out of range
  // on purpose: those must be InvalidArgument).
  CropWindow window;
  window.y = h > 0 ? a % (h + (what == 5 ? 2 : 0)) : 0;
  window.x = w > 0 ? b % (w + 1) : 0;
  window.height = std::max<int64_t>(0, h - window.y - (c & 15));
  window.width = std::max<int64_t>(0, w - window.x - (c >> 4));
  options.crop = window;
  int64_t window_x = -1;
  absl::StatusOr<Tensor> windowed =
      what == 4 ? DecodeJpegCovering(jpeg, options, &window_x) : DecodeJpeg(jpeg, options);
  const bool valid = window.height > 0 && window.width > 0 && window.y + window.height <= h &&
                     window.x + window.width <= w;
  if (!valid) {
    Check(!windowed.ok() && absl::IsInvalidArgument(windowed.status()));
    return 0;
  }
  if (!windowed.ok()) return 0;
  Check(windowed->dim(0) == window.height);
  if (what == 4) {
    Check(window_x >= 0 && window_x + window.width <= windowed->dim(1));
  } else {
    window_x = 0;
    Check(windowed->dim(1) == window.width);
  }
  options.crop.reset();
  absl::StatusOr<Tensor> whole = DecodeJpeg(jpeg, options);
  if (!whole.ok()) return 0;  // A JPEG cut short below the window decodes only windowed.
  if (!CleanForLibjpeg(jpeg)) return 0;
  absl::StatusOr<Tensor> expected = Crop(*whole, window);
  Check(expected.ok());
  absl::StatusOr<Tensor> got =
      Crop(*windowed, CropWindow{0, window_x, window.height, window.width});
  Check(got.ok());
  const Tensor ga = got->Clone(), gb = expected->Clone();
  if (!ga.Equals(gb)) {  // Say where, before the abort: the finding needs it.
    const uint8_t* pa = ga.data<uint8_t>();
    const uint8_t* pb = gb.data<uint8_t>();
    int64_t diffs = 0, first = -1;
    for (int64_t i = 0; i < ga.num_elements(); ++i) {
      if (pa[i] != pb[i]) {
        ++diffs;
        if (first < 0) first = i;
      }
    }
    std::fprintf(stderr,
                 "windowed decode differs: image %lldx%lld (scaled %lldx%lld), window y=%lld "
                 "x=%lld h=%lld w=%lld, covering x=%lld, scale 1/%d, channels %d: %lld values "
                 "differ, the first at %lld (%d vs %d)\n",
                 static_cast<long long>(header->height), static_cast<long long>(header->width),
                 static_cast<long long>(h), static_cast<long long>(w),
                 static_cast<long long>(window.y), static_cast<long long>(window.x),
                 static_cast<long long>(window.height), static_cast<long long>(window.width),
                 static_cast<long long>(window_x), options.scale_denom, options.channels,
                 static_cast<long long>(diffs), static_cast<long long>(first), pa[first],
                 pb[first]);
    std::abort();
  }
  return 0;
}
