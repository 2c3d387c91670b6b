#include "train/data/image_dataset.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "ops/counter_rng.h"
#include "ops/decode_jpeg.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "train/data/file_records.h"

namespace sluice::train::data {
namespace {

inline constexpr uint64_t kPadCropStream = 0x50414443;  // "PADC"

// Component order of a parsed record.
enum { kEncoded, kLabel, kHeight, kWidth, kFormat };

absl::StatusOr<Tensor> DecodeImage(const Element& parsed, int channels) {
  const std::string& encoded = parsed[kEncoded].scalar<std::string>();
  const std::string& format = parsed[kFormat].scalar<std::string>();
  if (format == "raw") {
    const int64_t height = parsed[kHeight].scalar<int64_t>();
    const int64_t width = parsed[kWidth].scalar<int64_t>();
    if (height <= 0 || width <= 0 ||
        height * width * channels != static_cast<int64_t>(encoded.size())) {
      return absl::InvalidArgumentError(absl::StrCat("raw image of ", encoded.size(),
                                                     " bytes does not hold ", height, "x", width,
                                                     "x", channels, " uint8 pixels"));
    }
    Tensor image(DType::kUint8, Shape{height, width, channels});
    std::memcpy(image.data<uint8_t>(), encoded.data(), encoded.size());
    return image;
  }
  if (format != "jpeg" && format != "JPEG" && !format.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("image/format is '", format, "'; expected 'jpeg' or 'raw'"));
  }
  return DecodeJpeg(encoded, {.channels = channels});
}

// Zero-pads by `pad` on every side, then crops back to the original size at a random offset.
Tensor RandomPadCrop(const Tensor& image, int64_t pad, uint64_t seed) {
  const int64_t h = image.shape()[0], w = image.shape()[1], c = image.shape()[2];
  CounterRng rng(seed, kPadCropStream);
  const int64_t dy = static_cast<int64_t>(rng.UniformInt(2 * pad + 1)) - pad;
  const int64_t dx = static_cast<int64_t>(rng.UniformInt(2 * pad + 1)) - pad;
  Tensor out = Tensor::Zeros(DType::kUint8, image.shape());
  const uint8_t* src = image.data<uint8_t>();
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t y = 0; y < h; ++y) {
    const int64_t sy = y + dy;
    if (sy < 0 || sy >= h) continue;
    const int64_t x0 = std::max<int64_t>(0, -dx), x1 = std::min<int64_t>(w, w - dx);
    if (x1 <= x0) continue;
    std::memcpy(dst + (y * w + x0) * c, src + (sy * w + x0 + dx) * c, (x1 - x0) * c);
  }
  return out;
}

}  // namespace

absl::StatusOr<Dataset> MakeImageDataset(const ImageDatasetOptions& options) {
  if (options.channels != 1 && options.channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels must be 1 or 3, not ", options.channels));
  }
  if ((options.height > 0) != (options.width > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("set both or neither of height and width, not ",
                                                   options.height, " and ", options.width));
  }
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size must be at least 1, not ", options.batch_size));
  }
  FeatureSpec spec;
  spec.features.push_back({"image/encoded", FixedLenFeature{DType::kBytes, {}}});
  spec.features.push_back({"image/class/label", FixedLenFeature{DType::kInt64, {}}});
  spec.features.push_back(
      {"image/height", FixedLenFeature{DType::kInt64, {}, Tensor::Scalar<int64_t>(0)}});
  spec.features.push_back(
      {"image/width", FixedLenFeature{DType::kInt64, {}, Tensor::Scalar<int64_t>(0)}});
  spec.features.push_back(
      {"image/format", FixedLenFeature{DType::kBytes, {}, Tensor::Scalar<std::string>("jpeg")}});
  SLUICE_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(std::move(spec)));

  // Each record carries its file and index (the reader's, skipped records included, exact
  // across a restore) so that a bad one is named exactly. With skip_errors, a corrupt record is
  // skipped by the reader, which goes on with the next one (an error would end the file).
  TFRecordOptions records;
  if (options.skip_errors) {
    records.skip_corrupt = true;
    records.on_skipped = options.on_skipped;
  }
  Dataset dataset =
      // Files in a seeded order for training, as tf.data; sorted for evaluation.
      Dataset::ListFiles(options.files, {.shuffle = options.shuffle_buffer > 0})
          .Interleave([records](const std::string& file) { return FileRecords(file, records); },
                      {.cycle_length = 1, .block_length = 1});
  if (options.limit >= 0) dataset = dataset.Take(options.limit);
  if (options.shuffle_buffer > 0) dataset = dataset.Shuffle(options.shuffle_buffer);
  const int channels = options.channels;
  const bool augment = options.augment;
  const int64_t pad = options.pad_crop;
  // ToTensor's x / 255, as a table made once.
  const float zero = 0.0f, one = 1.0f;
  SLUICE_ASSIGN_OR_RETURN(NormalizeTable table,
                          NormalizeTable::Create(channels, {&zero, 1}, {&one, 1}));
  auto to_float = std::make_shared<const NormalizeTable>(std::move(table));
  const int64_t height = options.height, width = options.width;
  const std::string size_hint = options.size_hint;
  dataset = dataset.Map(
      [parser, channels, augment, pad, to_float, height, width, size_hint](
          Element element, const ElementContext& context) -> absl::StatusOr<Element> {
        const int64_t index = element[kIndexComponent].scalar<int64_t>();
        const std::string& file = element[kFileComponent].scalar<std::string>();
        Tensor label;
        absl::StatusOr<Tensor> image = [&]() -> absl::StatusOr<Tensor> {
          SLUICE_ASSIGN_OR_RETURN(Element parsed,
                                  parser.Parse(element[kRecordComponent].scalar<std::string>()));
          SLUICE_ASSIGN_OR_RETURN(Tensor decoded, DecodeImage(parsed, channels));
          if (height > 0 && (decoded.dim(0) != height || decoded.dim(1) != width)) {
            return absl::InvalidArgumentError(absl::StrCat("a ", decoded.dim(0), " x ",
                                                           decoded.dim(1), " image, not ", height,
                                                           " x ", width, size_hint));
          }
          if (augment) {
            SLUICE_ASSIGN_OR_RETURN(decoded, RandomFlipLeftRight(decoded, context.seed));
            decoded = RandomPadCrop(decoded, pad, context.seed);
          }
          SLUICE_ASSIGN_OR_RETURN(Tensor normalized, Normalize(decoded, *to_float));
          label = std::move(parsed[kLabel]);
          return normalized;
        }();
        if (!image.ok()) {
          return AtRecord(image.status(), file, index);
        }
        return Element{*std::move(image), std::move(label)};
      },
      {.num_parallel_calls = options.num_parallel_calls});
  if (options.skip_errors) dataset = dataset.IgnoreErrors(options.on_skipped);
  Options pipeline;
  pipeline.seed = options.seed;
  return dataset.Batch(options.batch_size, {.drop_remainder = options.drop_remainder})
      .Prefetch()
      .WithOptions(pipeline);
}

}  // namespace sluice::train::data
