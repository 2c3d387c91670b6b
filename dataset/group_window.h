#ifndef SLUICE_DATASET_GROUP_WINDOW_H_
#define SLUICE_DATASET_GROUP_WINDOW_H_

#include <memory>
#include <vector>

#include "core/element.h"
#include "dataset/dataset_base.h"

namespace sluice {

// The window GroupByWindow hands its reduce function: a group's elements in input order, held
// in memory and shared with the GroupByWindow iterator. Its checkpoint is the position.
class GroupWindowDataset : public DatasetBase {
 public:
  explicit GroupWindowDataset(std::shared_ptr<const std::vector<Element>> elements)
      : DatasetBase("GroupWindow", {}), elements_(std::move(elements)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override { return static_cast<int64_t>(elements_->size()); }
  std::string Describe() const override;

  // What reductions that look at the elements (BucketBySequenceLength's padding) read.
  const std::vector<Element>& elements() const { return *elements_; }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_GROUP_WINDOW_H_
