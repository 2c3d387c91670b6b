// Image ops on the three real photos of tests/data/images3.tfrecord (JPEG quality 90, 500x375 and
// 375x500), one thread. items_per_second is images per second.
//
//   build-bench/bench/image_ops_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/proto/example.pb.h"
#include "io/tfrecord_reader.h"
#include "ops/crop.h"
#include "ops/decode_jpeg.h"
#include "ops/encode_jpeg.h"
#include "ops/flip.h"
#include "ops/jpeg_restart.h"
#include "ops/normalize.h"
#include "ops/random_resized_crop.h"
#include "ops/resize.h"

namespace sluice {
namespace {

// tests/data beside this source file, or $SLUICE_TEST_DATA.
std::string DataDir() {
  if (const char* env = std::getenv("SLUICE_TEST_DATA")) return env;
  std::string file = __FILE__;
  return file.substr(0, file.rfind('/')) + "/../tests/data";
}

const std::vector<std::string>& Photos() {
  static const std::vector<std::string>* photos = [] {
    auto* out = new std::vector<std::string>;
    const std::string path = DataDir() + "/images3.tfrecord";
    auto reader = TFRecordReader::Open(path);
    if (!reader.ok()) {
      std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
      std::exit(1);
    }
    std::string record;
    while (true) {
      auto more = (*reader)->ReadRecord(&record);
      if (!more.ok() || !*more) break;
      proto::Example example;
      example.ParseFromString(record);
      out->push_back(example.features().feature().at("image/encoded").bytes_list().value(0));
    }
    if (out->size() != 3) {
      std::fprintf(stderr, "expected 3 photos in %s\n", path.c_str());
      std::exit(1);
    }
    return out;
  }();
  return *photos;
}

template <typename T>
void Check(const absl::StatusOr<T>& result, benchmark::State& state) {
  if (!result.ok()) state.SkipWithError(result.status().ToString().c_str());
}

// The photos re-encoded with a restart marker every `interval` MCUs (sluice convert images
// --restart-interval), or as they are for 0.
std::vector<std::string> PhotosWithRestarts(int interval) {
  std::vector<std::string> out;
  for (const std::string& jpeg : Photos()) {
    out.push_back(interval == 0 ? jpeg : *AddJpegRestartMarkers(jpeg, interval));
  }
  return out;
}

void BM_DecodeFull(benchmark::State& state) {
  const std::vector<std::string> photos = PhotosWithRestarts(static_cast<int>(state.range(1)));
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const std::string& jpeg = photos[i++ % photos.size()];
    auto image = DecodeJpeg(jpeg, {.fast_dct = state.range(0) != 0});
    Check(image, state);
    bytes += jpeg.size();
    benchmark::DoNotOptimize(image);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_DecodeFull)
    ->ArgNames({"fast_dct", "restart_interval"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({0, 2})
    ->Args({0, 4})
    ->Args({0, 8});

// A typical random-resized-crop window: the centred window of half the image's area (the mean
// area fraction is 0.54), decoded at full size and at the DCT scales.
void BM_DecodeCropWindow(benchmark::State& state) {
  const auto& photos = Photos();
  const int denom = static_cast<int>(state.range(0));
  std::vector<CropWindow> windows;
  for (const std::string& jpeg : photos) {
    auto h = ReadJpegHeader(jpeg);
    const int64_t sh = JpegScaledSize(h->height, denom), sw = JpegScaledSize(h->width, denom);
    const int64_t wh = sh * 707 / 1000, ww = sw * 707 / 1000;
    windows.push_back({(sh - wh) / 2, (sw - ww) / 2, wh, ww});
  }
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i++ % photos.size();
    auto image = DecodeJpeg(photos[k], {.crop = windows[k], .scale_denom = denom});
    Check(image, state);
    benchmark::DoNotOptimize(image);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeCropWindow)->ArgName("scale_denom")->Arg(1)->Arg(2)->Arg(4);

void BM_DecodeAndRandomResizedCrop(benchmark::State& state) {
  const std::vector<std::string> photos = PhotosWithRestarts(static_cast<int>(state.range(1)));
  const int64_t size = state.range(0);
  uint64_t seed = 0;
  for (auto _ : state) {
    auto image = DecodeAndRandomResizedCrop(photos[seed % photos.size()], size, size, seed);
    ++seed;
    Check(image, state);
    benchmark::DoNotOptimize(image);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeAndRandomResizedCrop)
    ->ArgNames({"size", "restart_interval"})
    ->Args({224, 0})
    ->Args({128, 0})
    ->Args({224, 1})
    ->Args({224, 2})
    ->Args({224, 4})
    ->Args({224, 8});

// The whole per-image CPU work of an ImageNet training input: decode + random resized crop to
// 224, random flip, normalize to bfloat16 CHW.
void BM_TrainTransform224(benchmark::State& state) {
  const auto& photos = Photos();
  uint64_t seed = 0;
  for (auto _ : state) {
    auto crop = DecodeAndRandomResizedCrop(photos[seed % photos.size()], 224, 224, seed);
    Check(crop, state);
    auto flipped = RandomFlipLeftRight(*crop, seed);
    auto out = Normalize(*flipped, kImageNetMean, kImageNetStd,
                         {.dtype = DType::kBFloat16, .channels_first = true});
    ++seed;
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TrainTransform224);

// The per-image work of `sluice bench` (float32 HWC): the three ops one after the other (fused =
// 0), or flip and normalize fused into the resize and written into a reused buffer (fused = 1;
// `sluice bench` writes rows of the batch instead, with streaming stores).
void BM_TrainTransformFloat224(benchmark::State& state) {
  const auto& photos = Photos();
  const bool fused = state.range(0) != 0;
  auto table = NormalizeTable::Create(3, kImageNetMean, kImageNetStd);
  Tensor dest(DType::kFloat32, Shape{224, 224, 3});
  uint64_t seed = 0;
  for (auto _ : state) {
    const std::string& jpeg = photos[seed % photos.size()];
    if (fused) {
      auto out = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed, {},
                                            {.flip_left_right = RandomFlipDecision(seed),
                                             .normalize = &*table,
                                             .destination = &dest});
      Check(out, state);
      benchmark::DoNotOptimize(out);
    } else {
      auto crop = DecodeAndRandomResizedCrop(jpeg, 224, 224, seed);
      Check(crop, state);
      auto flipped = RandomFlipLeftRight(*crop, seed);
      auto out = Normalize(*flipped, kImageNetMean, kImageNetStd);
      benchmark::DoNotOptimize(out);
    }
    ++seed;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TrainTransformFloat224)->ArgName("fused")->Arg(0)->Arg(1);

// Resize to 224x224 from a full 500x375 photo and from a typical crop (the centred 300x300).
// The whole image resized to 224x224 and rounded back to uint8, as the pipeline's decode ops do.
absl::StatusOr<Tensor> Rounded224(const Tensor& image,
                                  ResizeMethod method = ResizeMethod::kBilinear) {
  return Resize(image,
                ResizeRegion{.height = static_cast<double>(image.dim(0)),
                             .width = static_cast<double>(image.dim(1))},
                224, 224, method, ResizeOutput{});
}

void BM_Resize224(benchmark::State& state) {
  auto full = DecodeJpeg(Photos()[0]);
  Tensor input = *full;
  if (state.range(1) != 0) input = *CenterCrop(*full, 300, 300);
  const auto method = state.range(0) == 0 ? ResizeMethod::kBilinear : ResizeMethod::kArea;
  for (auto _ : state) {
    auto out = Rounded224(input, method);
    Check(out, state);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(input.shape().DebugString() +
                 (method == ResizeMethod::kArea ? " area" : " bilinear"));
}
BENCHMARK(BM_Resize224)->ArgNames({"area", "crop"})->Args({0, 0})->Args({0, 1})->Args({1, 0});

// The per-image work after a Snapshot of decoded images (`sluice bench --snapshot`): a random
// resized crop window of a decoded 500x375 photo, flipped and normalized by the resize, written
// with streaming stores into a batch-sized ring of rows as the pipeline writes its batches.
void BM_CropFlipNormalizeDecoded224(benchmark::State& state) {
  std::vector<Tensor> decoded;
  for (const std::string& jpeg : Photos()) decoded.push_back(*DecodeJpeg(jpeg, {.channels = 3}));
  auto table = NormalizeTable::Create(3, kImageNetMean, kImageNetStd);
  constexpr int64_t kRows = 64;
  Tensor batch(DType::kFloat32, Shape{kRows, 224, 224, 3});
  uint64_t seed = 0;
  for (auto _ : state) {
    const Tensor& image = decoded[seed % decoded.size()];
    const CropWindow w = SampleRandomResizedCrop(image.dim(0), image.dim(1), seed);
    Tensor row = *batch.SubTensor(static_cast<int64_t>(seed % kRows));
    auto out = Resize(image,
                      ResizeRegion{.y = static_cast<double>(w.y),
                                   .x = static_cast<double>(w.x),
                                   .height = static_cast<double>(w.height),
                                   .width = static_cast<double>(w.width)},
                      224, 224, ResizeMethod::kBilinear,
                      {.flip_left_right = RandomFlipDecision(seed),
                       .normalize = &*table,
                       .destination = &row,
                       .streaming_stores = true});
    Check(out, state);
    ++seed;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CropFlipNormalizeDecoded224);

void BM_Normalize224(benchmark::State& state) {
  auto full = DecodeJpeg(Photos()[0]);
  const Tensor image = *Rounded224(*full);
  const DType dtype = state.range(0) == 0 ? DType::kFloat32 : DType::kBFloat16;
  const bool chw = state.range(1) != 0;
  for (auto _ : state) {
    auto out =
        Normalize(image, kImageNetMean, kImageNetStd, {.dtype = dtype, .channels_first = chw});
    Check(out, state);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Normalize224)->ArgNames({"bf16", "chw"})->Args({0, 0})->Args({0, 1})->Args({1, 1});

void BM_FlipLeftRight224(benchmark::State& state) {
  auto full = DecodeJpeg(Photos()[0]);
  const Tensor image = *Rounded224(*full);
  for (auto _ : state) {
    auto out = FlipLeftRight(image);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FlipLeftRight224);

void BM_EncodeJpeg(benchmark::State& state) {
  auto full = DecodeJpeg(Photos()[0]);
  for (auto _ : state) {
    auto out = EncodeJpeg(*full, {.quality = 90});
    Check(out, state);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeJpeg);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
