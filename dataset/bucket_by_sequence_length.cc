// BucketBySequenceLength, as tf.data.experimental.bucket_by_sequence_length: a GroupByWindow
// keyed by bucket whose window size is the bucket's batch size and whose reduction is one
// PaddedBatch (or Batch with no_padding). Its checks run when the pipeline starts, so a bad
// argument is the first GetNext's error, as elsewhere in the engine.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/group_window.h"

namespace sluice {
namespace {

absl::Status CheckBuckets(const std::vector<int64_t>& boundaries,
                          const std::vector<int64_t>& batch_sizes, const BucketOptions& options) {
  const std::string where =
      absl::StrCat("BucketBySequenceLength(boundaries [", absl::StrJoin(boundaries, ", "),
                   "], batch sizes [", absl::StrJoin(batch_sizes, ", "), "])");
  if (batch_sizes.size() != boundaries.size() + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": needs one batch size more than boundaries"));
  }
  for (size_t i = 0; i < boundaries.size(); ++i) {
    if (boundaries[i] < 1 || (i > 0 && boundaries[i] <= boundaries[i - 1])) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": boundaries must be positive and increasing"));
    }
  }
  if (std::any_of(batch_sizes.begin(), batch_sizes.end(), [](int64_t b) { return b < 1; })) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": batch sizes must be >= 1"));
  }
  if (options.pad_to_bucket_boundary && boundaries.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": pad_to_bucket_boundary needs at least one boundary"));
  }
  if (options.pad_to_bucket_boundary && options.no_padding) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": pad_to_bucket_boundary and no_padding exclude each other"));
  }
  return absl::OkStatus();
}

// The padded shapes of bucket `bucket`'s batches, for a window whose first element is `first`.
std::vector<std::vector<int64_t>> BucketShapes(const BucketOptions& options, int64_t boundary,
                                               const Element& first) {
  if (!options.pad_to_bucket_boundary) return options.padded_shapes;
  std::vector<std::vector<int64_t>> shapes = options.padded_shapes;
  if (shapes.empty()) {
    for (const Tensor& t : first) {
      std::vector<int64_t> s(static_cast<size_t>(t.rank()), -1);
      if (!s.empty()) s[0] = boundary - 1;
      shapes.push_back(std::move(s));
    }
    return shapes;
  }
  for (auto& shape : shapes) {
    for (int64_t& d : shape) {
      if (d == -1) d = boundary - 1;
    }
  }
  return shapes;
}

// What every bucket's batches are, whatever the bucket: the input's dtypes, one more dimension,
// and no size known (batch sizes and padded lengths vary by bucket).
ElementSpec BucketBatchSpec(const ElementSpec& input) {
  if (!input.known()) return ElementSpec();
  std::vector<TensorSpec> components = input.components();
  for (TensorSpec& c : components) {
    if (!c.shape.unknown_rank()) c.shape = PartialShape::UnknownDims(c.shape.rank() + 1);
  }
  return ElementSpec(std::move(components));
}

}  // namespace

Dataset Dataset::BucketBySequenceLength(KeyFn length_fn, std::vector<int64_t> bucket_boundaries,
                                        std::vector<int64_t> bucket_batch_sizes,
                                        BucketOptions options) const {
  const absl::Status valid = CheckBuckets(bucket_boundaries, bucket_batch_sizes, options);
  auto key_fn = [length_fn = std::move(length_fn), bucket_boundaries, options,
                 valid](const Element& e) -> absl::StatusOr<int64_t> {
    SLUICE_RETURN_IF_ERROR(valid);
    if (!length_fn) return absl::InvalidArgumentError("BucketBySequenceLength: no length_fn");
    SLUICE_ASSIGN_OR_RETURN(const int64_t length, length_fn(e));
    const int64_t bucket =
        std::upper_bound(bucket_boundaries.begin(), bucket_boundaries.end(), length) -
        bucket_boundaries.begin();
    if (options.pad_to_bucket_boundary &&
        bucket == static_cast<int64_t>(bucket_boundaries.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("BucketBySequenceLength: an element of length ", length,
                       " with pad_to_bucket_boundary; lengths must be below the last boundary, ",
                       bucket_boundaries.back()));
    }
    return bucket;
  };
  // Keys come from key_fn, or from a restored checkpoint: checked before use.
  auto check_bucket = [n = static_cast<int64_t>(bucket_batch_sizes.size())](int64_t bucket) {
    return bucket >= 0 && bucket < n
               ? absl::OkStatus()
               : absl::DataLossError(
                     absl::StrCat("BucketBySequenceLength: no bucket ", bucket, " of ", n));
  };
  auto size_fn = [bucket_batch_sizes, check_bucket](int64_t bucket) -> absl::StatusOr<int64_t> {
    SLUICE_RETURN_IF_ERROR(check_bucket(bucket));
    return bucket_batch_sizes[static_cast<size_t>(bucket)];
  };
  auto reduce_fn = [bucket_boundaries, bucket_batch_sizes, options, check_bucket](
                       int64_t bucket, Dataset window) -> absl::StatusOr<Dataset> {
    SLUICE_RETURN_IF_ERROR(check_bucket(bucket));
    const int64_t batch_size = bucket_batch_sizes[static_cast<size_t>(bucket)];
    if (options.no_padding) {
      return window.Batch(batch_size, {.drop_remainder = options.drop_remainder});
    }
    std::vector<std::vector<int64_t>> shapes = options.padded_shapes;
    if (options.pad_to_bucket_boundary) {
      // The last bucket has no boundary (key_fn keeps elements out of it; a checkpoint may not).
      if (bucket >= static_cast<int64_t>(bucket_boundaries.size())) {
        return absl::DataLossError(
            absl::StrCat("BucketBySequenceLength: bucket ", bucket, " has no boundary to pad to"));
      }
      // The first element's components tell the ranks to pad when no shapes are given.
      const auto* group = dynamic_cast<const GroupWindowDataset*>(window.base().get());
      shapes = BucketShapes(
          options, bucket_boundaries[static_cast<size_t>(bucket)],
          group != nullptr && !group->elements().empty() ? group->elements().front() : Element{});
    }
    return window.PaddedBatch(batch_size, {.padded_shapes = std::move(shapes),
                                           .padding_values = options.padding_values,
                                           .drop_remainder = options.drop_remainder});
  };
  return GroupByWindow(std::move(key_fn), std::move(reduce_fn), std::move(size_fn),
                       BucketBatchSpec(element_spec()));
}

}  // namespace sluice
