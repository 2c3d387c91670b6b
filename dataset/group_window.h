#ifndef SLUICE_DATASET_GROUP_WINDOW_H_
#define SLUICE_DATASET_GROUP_WINDOW_H_

#include <memory>
#include <utility>
#include <vector>

#include "core/element.h"
#include "dataset/dataset_base.h"

namespace sluice {

// The window GroupByWindow hands its reduce function: a group's elements in input order, held
// in memory and shared with the GroupByWindow iterator, and of its input's element_spec
// (`spec`). Its checkpoint is the position.
class GroupWindowDataset : public DatasetBase {
 public:
  GroupWindowDataset(std::shared_ptr<const std::vector<Element>> elements, ElementSpec spec)
      : DatasetBase("GroupWindow", {}), elements_(std::move(elements)), spec_(std::move(spec)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override { return static_cast<int64_t>(elements_->size()); }
  ElementSpec ComputeElementSpec() const override { return spec_; }
  std::string Describe() const override;

  // What reductions that look at the elements (BucketBySequenceLength's padding) read.
  const std::vector<Element>& elements() const { return *elements_; }

 private:
  std::shared_ptr<const std::vector<Element>> elements_;
  ElementSpec spec_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_GROUP_WINDOW_H_
