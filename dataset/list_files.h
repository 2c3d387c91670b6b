#ifndef SLUICE_DATASET_LIST_FILES_H_
#define SLUICE_DATASET_LIST_FILES_H_

#include <string>
#include <vector>

#include "dataset/dataset_base.h"

namespace sluice {

// The glob patterns of a ListFiles node (Dataset::ListFiles); nullptr for any other node.
// Auto-sharding (dataset/auto_shard.h) counts a pipeline's files with it.
const std::vector<std::string>* ListFilesPatterns(const DatasetBase& node);

}  // namespace sluice

#endif  // SLUICE_DATASET_LIST_FILES_H_
