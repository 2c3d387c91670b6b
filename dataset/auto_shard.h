#ifndef SLUICE_DATASET_AUTO_SHARD_H_
#define SLUICE_DATASET_AUTO_SHARD_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "dataset/dataset.h"

namespace sluice {

// tf.data's AutoShardPolicy: how one worker of `num_shards` keeps its part of a pipeline.
enum class AutoShardPolicy {
  // kFile when every ListFiles of the pipeline lists at least num_shards files, else kData.
  kAuto,
  // Each worker reads only its files (Options::file_shard): every ListFiles keeps the files
  // i % num_shards == index of its sorted list. The workers' element counts may differ.
  kFile,
  // Each worker runs the whole pipeline and keeps its elements index, index + num_shards, ...
  // of the output (Shard at the end). Every worker reads and decodes everything.
  kData,
  // No sharding: every worker sees the whole pipeline.
  kOff,
};

absl::StatusOr<AutoShardPolicy> ParseAutoShardPolicy(absl::string_view name);

struct ShardedDataset {
  Dataset dataset;
  AutoShardPolicy policy;   // the one applied: never kAuto
  std::string description;  // e.g. "by file: ListFiles(/data/*.tfrecord) 4 of 10 files"
};

// Worker `index`'s share of `data`. kFile fails, saying why, when a ListFiles lists fewer files
// than there are shards or the pipeline has no ListFiles (its files are named some other way).
// The pipeline's files are listed once here to count them.
absl::StatusOr<ShardedDataset> AutoShard(const Dataset& data, int64_t num_shards, int64_t index,
                                         AutoShardPolicy policy = AutoShardPolicy::kAuto);

}  // namespace sluice

#endif  // SLUICE_DATASET_AUTO_SHARD_H_
