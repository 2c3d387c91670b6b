#include "dataset/auto_shard.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"
#include "dataset/list_files.h"

namespace sluice {
namespace {

struct ListedFiles {
  const DatasetBase* node;
  int64_t count;
};

// Every ListFiles the pipeline reads through its inputs (not inside Interleave's or FlatMap's
// functions, which this walk cannot see), with how many files it lists now.
absl::Status FindListFiles(const DatasetBase& node, std::vector<ListedFiles>& out) {
  if (const std::vector<std::string>* patterns = ListFilesPatterns(node)) {
    absl::StatusOr<std::vector<std::string>> files = ListFilesMatching(*patterns);
    if (!files.ok()) {
      return WithContext(files.status(), absl::StrCat("auto-shard: ", node.name(), ": "));
    }
    out.push_back({&node, static_cast<int64_t>(files->size())});
  }
  for (const auto& input : node.inputs()) SLUICE_RETURN_IF_ERROR(FindListFiles(*input, out));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AutoShardPolicy> ParseAutoShardPolicy(absl::string_view name) {
  if (name == "auto") return AutoShardPolicy::kAuto;
  if (name == "file") return AutoShardPolicy::kFile;
  if (name == "data") return AutoShardPolicy::kData;
  if (name == "off") return AutoShardPolicy::kOff;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown auto-shard policy '", name, "': want auto, file, data or off"));
}

absl::StatusOr<ShardedDataset> AutoShard(const Dataset& data, int64_t num_shards, int64_t index,
                                         AutoShardPolicy policy) {
  if (num_shards < 1 || index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("auto-shard: shard ", index, " of ", num_shards, " is invalid"));
  }
  if (policy == AutoShardPolicy::kOff || num_shards == 1) {
    return ShardedDataset{data, AutoShardPolicy::kOff, "off"};
  }
  if (policy == AutoShardPolicy::kAuto || policy == AutoShardPolicy::kFile) {
    std::vector<ListedFiles> lists;
    SLUICE_RETURN_IF_ERROR(FindListFiles(*data.base(), lists));
    std::vector<std::string> why_not;
    std::vector<std::string> parts;
    if (lists.empty()) why_not.push_back("the pipeline has no ListFiles");
    for (const ListedFiles& l : lists) {
      if (l.count < num_shards) {
        why_not.push_back(absl::StrCat(l.node->Describe(), " lists ", l.count,
                                       " files, fewer than ", num_shards, " shards"));
      }
      parts.push_back(absl::StrCat(l.node->Describe(), " ",
                                   (l.count - index + num_shards - 1) / num_shards, " of ", l.count,
                                   " files"));
    }
    if (why_not.empty()) {
      return ShardedDataset{data.WithOptions(Options{.file_shard = FileShard{num_shards, index}}),
                            AutoShardPolicy::kFile,
                            absl::StrCat("by file: ", absl::StrJoin(parts, ", "))};
    }
    if (policy == AutoShardPolicy::kFile) {
      return absl::InvalidArgumentError(
          absl::StrCat("auto-shard by file is impossible: ", absl::StrJoin(why_not, "; "),
                       " (use the data policy)"));
    }
  }
  return ShardedDataset{
      data.Shard(num_shards, index), AutoShardPolicy::kData,
      absl::StrCat("by element: the elements i with i % ", num_shards, " == ", index)};
}

}  // namespace sluice
