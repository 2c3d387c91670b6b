#include "train/fit/replicas.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"

namespace sluice::train::fit {

Replicas::Replicas(distributed::Communicator* communicator, int64_t bucket_bytes) {
  if (communicator != nullptr && communicator->size() > 1) dp_.emplace(*communicator, bucket_bytes);
}

absl::StatusOr<std::vector<double>> Replicas::Sum(std::vector<double> values) {
  if (!dp_) return values;
  return dp_->Sum(std::move(values));
}

absl::StatusOr<std::vector<std::string>> Replicas::AllGather(const std::string& bytes) {
  if (!dp_) return std::vector<std::string>{bytes};
  return dp_->comm().AllGatherBytes(bytes);
}

absl::StatusOr<Dataset> Replicas::Shard(const Dataset& data, AutoShardPolicy policy,
                                        absl::string_view who, std::FILE* describe_to) {
  if (!dp_) return data;
  absl::StatusOr<ShardedDataset> sharded = AutoShard(data, dp_->size(), dp_->rank(), policy);
  if (!sharded.ok()) return WithContext(sharded.status(), absl::StrCat(who, ": "));
  if (describe_to != nullptr && chief()) {
    std::fprintf(describe_to, "%s: data-parallel over %d ranks; rank 0's input is sharded %s\n",
                 std::string(who).c_str(), dp_->size(), sharded->description.c_str());
  }
  return sharded->dataset;
}

absl::StatusOr<int64_t> Replicas::AgreedCardinality(int64_t cardinality) {
  if (!dp_) return cardinality;
  std::vector<int64_t> v = {cardinality, -cardinality};  // min, and max as -min(-x)
  SLUICE_RETURN_IF_ERROR(
      dp_->comm().AllReduceValues(absl::MakeSpan(v), distributed::ReduceOp::kMin));
  const int64_t lo = v[0], hi = -v[1];
  if (lo >= 0) return lo;
  return lo == hi ? lo : kUnknownCardinality;
}

absl::Status Replicas::AgreeOnStep(int64_t step) {
  if (!dp_) return absl::OkStatus();
  std::vector<int64_t> v = {step, -step};  // min, and max as -min(-x)
  SLUICE_RETURN_IF_ERROR(
      dp_->comm().AllReduceValues(absl::MakeSpan(v), distributed::ReduceOp::kMin));
  if (v[0] == -v[1]) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the ranks stand at different global steps (", v[0], " to ", -v[1],
      "): each must resume from the same checkpoint; is the backup folder shared by all?"));
}

absl::Status Replicas::SyncModel(layers::Module& model) {
  if (!dp_) return absl::OkStatus();
  return dp_->SyncModel(model);
}

absl::Status Replicas::AgreeOnWrite(const std::string& path, const absl::Status& written) {
  if (!dp_) return written;
  SLUICE_ASSIGN_OR_RETURN(std::vector<double> failed, dp_->Sum({written.ok() ? 0.0 : 1.0}));
  if (!written.ok()) return written;
  if (failed[0] > 0) {
    return absl::InternalError(absl::StrCat(path, ": rank 0 could not write the checkpoint"));
  }
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
