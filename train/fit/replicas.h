#ifndef SLUICE_TRAIN_FIT_REPLICAS_H_
#define SLUICE_TRAIN_FIT_REPLICAS_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataset/auto_shard.h"
#include "dataset/dataset.h"
#include "distributed/communicator.h"
#include "train/fit/data_parallel.h"
#include "train/layers/module.h"

namespace sluice::train::fit {

// The processes that train one model together, kept apart from the trainer as Keras keeps its
// distribution strategy: one process alone, or the ranks of a communicator with more than one.
// Alone, every agreement here is the identity and costs nothing, so that the loop reads the same
// either way; `distributed()` tells where behaviour differs.
class Replicas {
 public:
  // `communicator`: not owned; nullptr or of size 1: one process alone.
  Replicas(distributed::Communicator* communicator, int64_t bucket_bytes);

  bool distributed() const { return dp_.has_value(); }
  int rank() const { return dp_ ? dp_->rank() : 0; }
  int size() const { return dp_ ? dp_->size() : 1; }
  // Rank 0: prints progress and writes files for the job.
  bool chief() const { return rank() == 0; }
  // The gradients' all-reduce; nullptr alone.
  DataParallel* data_parallel() { return dp_ ? &*dp_ : nullptr; }

  // Element-wise sums over the ranks of host numbers (metric sums, image counts, votes).
  absl::StatusOr<std::vector<double>> Sum(std::vector<double> values);
  // Every rank's `bytes`, by rank.
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& bytes);

  // This rank's shard of `data` (AutoShard); when `describe_to` is set, the chief says there how
  // its input is sharded. Errors start with `who`.
  absl::StatusOr<Dataset> Shard(const Dataset& data, AutoShardPolicy policy, absl::string_view who,
                                std::FILE* describe_to);
  // The steps per pass every rank can take: the least of the ranks' known cardinalities, else
  // unknown (-2).
  absl::StatusOr<int64_t> AgreedCardinality(int64_t cardinality);
  // OK when every rank stands at global step `step`; FailedPrecondition naming the least and
  // the greatest otherwise.
  absl::Status AgreeOnStep(int64_t step);
  // Checks that every rank's model has the same variables and copies rank 0's values to all.
  absl::Status SyncModel(layers::Module& model);
  // The chief wrote `path` (`written` there; ignored elsewhere): every rank learns whether it
  // could, and fails if it could not.
  absl::Status AgreeOnWrite(const std::string& path, const absl::Status& written);

 private:
  std::optional<DataParallel> dp_;
};

}  // namespace sluice::train::fit

#endif  // SLUICE_TRAIN_FIT_REPLICAS_H_
