#include "train/recipes/imagenet_pipeline.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/buffer_pool.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "dataset/batch_rows.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "ops/decode_jpeg.h"
#include "ops/flip.h"
#include "ops/normalize.h"
#include "ops/random_resized_crop.h"
#include "ops/read_file.h"
#include "ops/resize.h"
#include "train/data/file_records.h"
#include "train/data/image_dataset_from_directory.h"

namespace sluice::train::recipes {
namespace {

// Free decoded images kept for reuse: about those in flight between the Map and
// the consumer (the Map's results and the Prefetch buffer).
constexpr size_t kDecodedImagesKept = 16;

// Every records dataset below yields {encoded JPEG, label, its size, file, index}: the file and the
// record's index in it (-1 for a file of its own), so that an image that fails to decode is named
// by its file and record (a Map's error alone names only its node and element). The file is one
// tensor per file, its records sharing it.
constexpr size_t kFile = 3, kIndex = 4;

// `status` (an error about `element`'s image) after where the image came from.
absl::Status FromSource(const absl::Status& status, const Element& element) {
  return data::AtRecord(status, element[kFile].scalar<std::string>(),
                        element[kIndex].scalar<int64_t>());
}

// The training transform's output, fused into its resize: flipped by the element's seed,
// normalized, written into the batch's row around the caches.
ResizeOutput IntoBatchRow(uint64_t seed, const NormalizeTable& table, Tensor* row) {
  return {.flip_left_right = RandomFlipDecision(seed),
          .normalize = &table,
          .destination = row,
          .streaming_stores = true};
}

// The decoded images are snapshotted; the random crop, flip and normalize run after the snapshot,
// on each epoch's own seeds.
absl::StatusOr<Dataset> SnapshotPipeline(const ImageNetPipelineOptions& config, Dataset records,
                                         std::shared_ptr<std::atomic<int64_t>> record_bytes) {
  const int64_t size = config.image_size;
  Options options;
  options.seed = config.seed;
  SLUICE_ASSIGN_OR_RETURN(const NormalizeTable table,
                          NormalizeTable::Create(3, kImageNetMean, kImageNetStd));
  auto rows = std::make_shared<BatchRows>(config.batch_size, DType::kFloat32, Shape{size, size, 3});
  Dataset dataset =
      records
          .Map(
              [record_bytes](Element element) -> absl::StatusOr<Element> {
                record_bytes->fetch_add(element[2].scalar<int64_t>(), std::memory_order_relaxed);
                absl::StatusOr<Tensor> image =
                    DecodeJpeg(element[0].scalar<std::string>(), {.channels = 3});
                if (!image.ok()) return FromSource(image.status(), element);
                return Element{*std::move(image), std::move(element[1])};
              },
              {.num_parallel_calls = config.parallelism})
          .Snapshot(config.snapshot)
          .Repeat(config.epochs > 0 ? config.epochs : -1)
          .Map(
              // The crop, flip and normalize fused into one resize, into the batch's row, as the
              // default pipeline does after its decode.
              [size, table, rows](Element element,
                                  const ElementContext& context) -> absl::StatusOr<Element> {
                const Tensor& decoded = element[0];
                if (decoded.rank() != 3) {
                  return absl::InvalidArgumentError(absl::StrCat("expected a decoded image, got ",
                                                                 decoded.shape().DebugString()));
                }
                const CropWindow w =
                    SampleRandomResizedCrop(decoded.dim(0), decoded.dim(1), context.seed);
                SLUICE_ASSIGN_OR_RETURN(Tensor out, rows->Row(context.index));
                SLUICE_ASSIGN_OR_RETURN(Tensor image,
                                        Resize(decoded,
                                               ResizeRegion{.y = static_cast<double>(w.y),
                                                            .x = static_cast<double>(w.x),
                                                            .height = static_cast<double>(w.height),
                                                            .width = static_cast<double>(w.width)},
                                               size, size, ResizeMethod::kBilinear,
                                               IntoBatchRow(context.seed, table, &out)));
                return Element{std::move(image), std::move(element[1])};
              },
              {.num_parallel_calls = config.parallelism});
  return dataset.Batch(config.batch_size).Prefetch().WithOptions(options);
}

// {encoded JPEG, label, its size, path, -1} from each file of a folder of class folders.
absl::StatusOr<Dataset> FolderRecords(const ImageNetPipelineOptions& config) {
  SLUICE_ASSIGN_OR_RETURN(const data::ImageDirectoryIndex index,
                          data::IndexImageDirectory(config.images_dir, {}));
  const int64_t n = static_cast<int64_t>(index.files.size());
  Tensor paths(DType::kBytes, Shape{n});
  for (int64_t i = 0; i < n; ++i) paths.data<std::string>()[i] = index.files[i];
  SLUICE_ASSIGN_OR_RETURN(Tensor labels, Tensor::FromVector<int64_t>(index.labels, Shape{n}));
  return Dataset::FromTensorSlices({std::move(paths), std::move(labels)})
      .Map(
          [](Element element) -> absl::StatusOr<Element> {
            SLUICE_ASSIGN_OR_RETURN(Tensor bytes, ReadFile(element[0].scalar<std::string>()));
            const int64_t size = static_cast<int64_t>(bytes.scalar<std::string>().size());
            return Element{std::move(bytes), std::move(element[1]), Tensor::Scalar<int64_t>(size),
                           std::move(element[0]), Tensor::Scalar<int64_t>(-1)};
          },
          {.num_parallel_calls = config.parallelism});
}

// {encoded JPEG, label, the record's size, file, index} from each record of the TFRecord files.
absl::StatusOr<Dataset> TFRecordRecords(const ImageNetPipelineOptions& config) {
  FeatureSpec spec;
  spec.features.push_back({"image/encoded", FixedLenFeature{DType::kBytes, {}}});
  spec.features.push_back({"image/class/label", FixedLenFeature{DType::kInt64, {}}});
  SLUICE_ASSIGN_OR_RETURN(ExampleParser parser, ExampleParser::Create(std::move(spec)));
  return Dataset::ListFiles(config.files)
      .Interleave([](const std::string& file) { return data::FileRecords(file, {}); },
                  {.cycle_length = kAutotune, .block_length = 1, .num_parallel_calls = kAutotune})
      .Map(
          [parser](Element element) -> absl::StatusOr<Element> {
            const std::string& record = element[data::kRecordComponent].scalar<std::string>();
            absl::StatusOr<Element> parsed = parser.Parse(record);
            if (!parsed.ok()) {
              return data::AtRecord(parsed.status(),
                                    element[data::kFileComponent].scalar<std::string>(),
                                    element[data::kIndexComponent].scalar<int64_t>());
            }
            parsed->push_back(Tensor::Scalar<int64_t>(static_cast<int64_t>(record.size())));
            parsed->push_back(std::move(element[data::kFileComponent]));
            parsed->push_back(std::move(element[data::kIndexComponent]));
            return parsed;  // {encoded, label, record size, file, index}
          },
          {.num_parallel_calls = config.parallelism});
}

// Whole decoded images, unbatched: decoded images differ in size.
Dataset DecodeOnly(const ImageNetPipelineOptions& config, Dataset records,
                   std::shared_ptr<std::atomic<int64_t>> record_bytes) {
  // Recycled image memory, as the full pipeline's: the ceiling pays no page faults either.
  std::shared_ptr<BufferPool> pool = BufferPool::Create(kDecodedImagesKept);
  Dataset dataset = records.Map(
      [record_bytes, pool](Element element) -> absl::StatusOr<Element> {
        record_bytes->fetch_add(element[2].scalar<int64_t>(), std::memory_order_relaxed);
        absl::StatusOr<Tensor> image =
            DecodeJpeg(element[0].scalar<std::string>(), {.channels = 3, .pool = pool.get()});
        if (!image.ok()) return FromSource(image.status(), element);
        return Element{*std::move(image), std::move(element[1])};
      },
      {.num_parallel_calls = config.parallelism});
  if (config.shuffle > 0) dataset = dataset.Shuffle(config.shuffle);
  return dataset.Prefetch();
}

// The decode, random resized crop, flip and normalize in one Map, into the batch's rows.
absl::StatusOr<Dataset> CropAndBatch(const ImageNetPipelineOptions& config, Dataset records,
                                     std::shared_ptr<std::atomic<int64_t>> record_bytes) {
  const int64_t size = config.image_size;
  SLUICE_ASSIGN_OR_RETURN(const NormalizeTable table,
                          NormalizeTable::Create(3, kImageNetMean, kImageNetStd));
  auto rows = std::make_shared<BatchRows>(config.batch_size, DType::kFloat32, Shape{size, size, 3});
  Dataset dataset = records.Map(
      [record_bytes, size, table, rows](Element element,
                                        const ElementContext& context) -> absl::StatusOr<Element> {
        record_bytes->fetch_add(element[2].scalar<int64_t>(), std::memory_order_relaxed);
        SLUICE_ASSIGN_OR_RETURN(Tensor out, rows->Row(context.index));
        // The crop and the flip draw from distinct streams of the same seed (ops/counter_rng.h);
        // flip and normalize are fused into the resize: bitwise RandomFlipLeftRight then
        // Normalize, one pass over the output.
        absl::StatusOr<Tensor> image =
            DecodeAndRandomResizedCrop(element[0].scalar<std::string>(), size, size, context.seed,
                                       {}, IntoBatchRow(context.seed, table, &out));
        if (!image.ok()) return FromSource(image.status(), element);
        return Element{*std::move(image), std::move(element[1])};
      },
      {.num_parallel_calls = config.parallelism});
  if (config.shuffle > 0) dataset = dataset.Shuffle(config.shuffle);
  return dataset.Batch(config.batch_size).Prefetch();
}

}  // namespace

absl::StatusOr<Dataset> ImageNetPipeline(const ImageNetPipelineOptions& config) {
  std::shared_ptr<std::atomic<int64_t>> record_bytes =
      config.record_bytes != nullptr ? config.record_bytes
                                     : std::make_shared<std::atomic<int64_t>>(0);
  SLUICE_ASSIGN_OR_RETURN(
      Dataset dataset, config.images_dir.empty() ? TFRecordRecords(config) : FolderRecords(config));
  if (!config.snapshot.empty()) {
    if (config.shuffle > 0) return absl::InvalidArgumentError("shuffle goes without snapshot");
    if (config.cache || config.decode_only) {
      return absl::InvalidArgumentError("snapshot goes with neither cache nor decode_only");
    }
    return SnapshotPipeline(config, std::move(dataset), record_bytes);
  }
  // Caching the encoded records (not decoded images) keeps memory at the dataset's size.
  if (config.cache) dataset = dataset.Cache();
  dataset = dataset.Repeat(config.epochs > 0 ? config.epochs : -1);
  Options options;
  options.seed = config.seed;
  options.checkpoint_sources = config.checkpoint_sources;
  if (config.decode_only) {
    return DecodeOnly(config, std::move(dataset), record_bytes).WithOptions(options);
  }
  SLUICE_ASSIGN_OR_RETURN(dataset, CropAndBatch(config, std::move(dataset), record_bytes));
  return dataset.WithOptions(options);
}

}  // namespace sluice::train::recipes
