#include "tools/image_pipeline.h"

#include <utility>

#include "core/status_macros.h"
#include "core/tensor.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "ops/decode_jpeg.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "ops/random_resized_crop.h"

namespace sluice::tools {

absl::StatusOr<Dataset> BuildPipeline(const BenchConfig& config,
                                      std::shared_ptr<std::atomic<int64_t>> record_bytes) {
  FeatureSpec spec;
  spec.features.push_back({"image/encoded", FixedLenFeature{DType::kBytes, {}}});
  spec.features.push_back({"image/class/label", FixedLenFeature{DType::kInt64, {}}});
  ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(std::move(spec)));

  Options options;
  options.seed = config.seed;
  Dataset dataset =
      Dataset::ListFiles(config.files)
          .Interleave(
              [](const std::string& file) { return Dataset::TFRecord(file); },
              {.cycle_length = kAutotune, .block_length = 1, .num_parallel_calls = kAutotune})
          .Map(
              [parser](Element element) -> absl::StatusOr<Element> {
                const std::string& record = element[0].scalar<std::string>();
                ASSIGN_OR_RETURN(Element parsed, parser.Parse(record));
                parsed.push_back(Tensor::Scalar<int64_t>(static_cast<int64_t>(record.size())));
                return parsed;  // {encoded, label, record size}
              },
              {.num_parallel_calls = config.parallelism});
  // Caching the encoded records (not decoded images) keeps memory at the dataset's size.
  if (config.cache) dataset = dataset.Cache();
  dataset = dataset.Repeat(config.epochs > 0 ? config.epochs : -1);
  const int64_t size = config.image_size;
  if (config.decode_only) {
    dataset = dataset.Map(
        [record_bytes](Element element) -> absl::StatusOr<Element> {
          record_bytes->fetch_add(element[2].scalar<int64_t>(), std::memory_order_relaxed);
          ASSIGN_OR_RETURN(Tensor image,
                           DecodeJpeg(element[0].scalar<std::string>(), {.channels = 3}));
          return Element{std::move(image), std::move(element[1])};
        },
        {.num_parallel_calls = config.parallelism});
    // Decoded images differ in size and cannot be batched: elements are images.
    return dataset.Prefetch().WithOptions(options);
  }
  dataset = dataset.Map(
      [record_bytes, size](Element element,
                           const ElementContext& context) -> absl::StatusOr<Element> {
        record_bytes->fetch_add(element[2].scalar<int64_t>(), std::memory_order_relaxed);
        // The crop and the flip draw from distinct streams of the same seed (ops/counter_rng.h).
        ASSIGN_OR_RETURN(Tensor image, DecodeAndRandomResizedCrop(element[0].scalar<std::string>(),
                                                                  size, size, context.seed));
        ASSIGN_OR_RETURN(image, RandomFlipLeftRight(image, context.seed));
        ASSIGN_OR_RETURN(image, Normalize(image, kImageNetMean, kImageNetStd));
        return Element{std::move(image), std::move(element[1])};
      },
      {.num_parallel_calls = config.parallelism});
  return dataset.Batch(config.batch).Prefetch().WithOptions(options);
}

}  // namespace sluice::tools
