#ifndef SLUICE_DATASET_OPTIONS_H_
#define SLUICE_DATASET_OPTIONS_H_

#include <cstdint>
#include <optional>

namespace sluice {

// Pass as a parallelism or buffer size to let AUTOTUNE choose it.
inline constexpr int kAutotune = -1;

// One shard of a pipeline's input files: ListFiles keeps the files i with
// i % num_shards == index of its sorted list, before any shuffle, so that the
// shards of one listing are disjoint and cover it whatever each shard's seed.
// Data-parallel training sets it (dataset/auto_shard.h), as tf.data's FILE
// auto-shard policy.
struct FileShard {
  int64_t num_shards = 1;
  int64_t index = 0;
};

// Pipeline-wide options, set with Dataset::WithOptions (the one nearest the
// end of the pipeline wins, field by field where set).
struct Options {
  // Seed for every random op that has no seed of its own. Unset: a fresh
  // random seed per iterator, so runs differ.
  std::optional<uint64_t> seed;
  // With seeds set and deterministic = true, two runs yield the same elements
  // in the same order whatever the parallelism. false lets parallel ops emit
  // whichever element is ready first.
  std::optional<bool> deterministic;
  // Worker threads of the pipeline's oneTBB arena; 0 = all cores.
  std::optional<int> threads;
  // AUTOTUNE budgets: busy workers (0 = the arena's threads) and buffered
  // bytes (0 = half of available memory).
  // cpu_budget also caps the arena's threads, so that no more than that many
  // element functions run at once even before AUTOTUNE has measured anything.
  std::optional<int> cpu_budget;
  std::optional<int64_t> ram_budget;
  // Whether an iterator whose pipeline has kAutotune knobs runs AUTOTUNE
  // (autotune/) beside it, as tf.data does. Unset means true; false leaves
  // the knobs at their starting values.
  std::optional<bool> autotune;
  // Read only this shard of every ListFiles in the pipeline.
  std::optional<FileShard> file_shard;
  // Whether checkpoints save buffered elements (Shuffle's, Prefetch's, a parallel Map's or
  // Interleave's) as their sources, positions and indices that recompute them on restore, where
  // every op below the buffer can (dataset/element_source.h). Unset means true; false saves the
  // elements themselves, for Map functions that are not deterministic functions of their input
  // and seed.
  std::optional<bool> checkpoint_sources;

  // Fields set in `outer` override this one's.
  Options MergedWith(const Options& outer) const {
    Options o = *this;
    if (outer.seed) o.seed = outer.seed;
    if (outer.deterministic) o.deterministic = outer.deterministic;
    if (outer.threads) o.threads = outer.threads;
    if (outer.cpu_budget) o.cpu_budget = outer.cpu_budget;
    if (outer.ram_budget) o.ram_budget = outer.ram_budget;
    if (outer.autotune) o.autotune = outer.autotune;
    if (outer.file_shard) o.file_shard = outer.file_shard;
    if (outer.checkpoint_sources) o.checkpoint_sources = outer.checkpoint_sources;
    return o;
  }
};

}  // namespace sluice

#endif  // SLUICE_DATASET_OPTIONS_H_
