#ifndef SLUICE_TESTS_TRAIN_RECIPES_RECIPE_TEST_UTIL_H_
#define SLUICE_TESTS_TRAIN_RECIPES_RECIPE_TEST_UTIL_H_

// Small image sets for the recipes' tests: TFRecords as `sluice convert` writes them, and folders
// of class folders of JPEGs.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "gtest/gtest.h"
#include "io/example_builder.h"
#include "io/tfrecord_writer.h"
#include "ops/encode_jpeg.h"

namespace sluice::train::recipes::testing {

// Every element of `dataset`, failing the test on an error.
inline std::vector<Element> ReadAll(const Dataset& dataset) {
  std::vector<Element> out;
  auto it = dataset.MakeIterator();
  while (true) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    out.push_back(**next);
  }
  return out;
}

// A TFRecord file of `count` raw-format grayscale images of `height` x `width` pixels (4x6 by
// default), image i labeled i % 10, its pixels all (i * 25) % 256.
inline void WriteRawImages(const std::string& path, int count, int64_t height = 4,
                           int64_t width = 6) {
  auto writer = TFRecordWriter::Open(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int i = 0; i < count; ++i) {
    ExampleBuilder example;
    example
        .AddBytes("image/encoded", {std::string(static_cast<size_t>(height * width),
                                                static_cast<char>((i * 25) % 256))})
        .AddInt64("image/class/label", {i % 10})
        .AddInt64("image/height", {height})
        .AddInt64("image/width", {width})
        .AddBytes("image/format", {"raw"});
    ASSERT_TRUE((*writer)->Write(example.Serialize()).ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

// A JPEG of `height` x `width` RGB pixels around `level`, with a texture that `seed` varies.
inline std::string Jpeg(int64_t height, int64_t width, int level, int seed) {
  Tensor image(DType::kUint8, Shape{height, width, 3});
  for (int64_t k = 0; k < height * width * 3; ++k) {
    image.data<uint8_t>()[k] = static_cast<uint8_t>(level + (k * 7 + seed) % 30);
  }
  absl::StatusOr<std::string> jpeg = EncodeJpeg(image);
  EXPECT_TRUE(jpeg.ok()) << jpeg.status();
  return jpeg.ok() ? *jpeg : "";
}

// root/dark and root/light, `per_class` JPEGs of 16x16 each: dark ones around 40, light ones
// around 200, which a small model tells apart.
inline void WriteDarkAndLightTree(const std::string& root, int per_class = 20) {
  for (int label = 0; label < 2; ++label) {
    const std::string folder = root + (label == 0 ? "/dark" : "/light");
    std::filesystem::create_directories(folder);
    for (int i = 0; i < per_class; ++i) {
      std::ofstream(folder + "/" + std::to_string(i) + ".jpg", std::ios::binary)
          << Jpeg(16, 16, label == 0 ? 40 : 200, i);
    }
  }
}

}  // namespace sluice::train::recipes::testing

#endif  // SLUICE_TESTS_TRAIN_RECIPES_RECIPE_TEST_UTIL_H_
