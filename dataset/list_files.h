#ifndef SLUICE_DATASET_LIST_FILES_H_
#define SLUICE_DATASET_LIST_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dataset/dataset_base.h"

namespace sluice {

// The glob patterns of a ListFiles node (Dataset::ListFiles); nullptr for any other node.
// Auto-sharding (dataset/auto_shard.h) counts a pipeline's files with it.
const std::vector<std::string>* ListFilesPatterns(const DatasetBase& node);

// The files ListFiles lists for `patterns`: the union of their matches (io/glob.h), sorted
// bytewise without duplicates. As tf.data's list_files, a pattern that matches nothing is no
// error unless none matches anything: then NotFound naming every pattern.
absl::StatusOr<std::vector<std::string>> ListFilesMatching(
    const std::vector<std::string>& patterns);

}  // namespace sluice

#endif  // SLUICE_DATASET_LIST_FILES_H_
