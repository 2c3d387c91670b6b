#ifndef SLUICE_DATASET_MIXING_ITERATOR_H_
#define SLUICE_DATASET_MIXING_ITERATOR_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataset/dataset_base.h"

namespace sluice {

// The element_spec of elements drawn from inputs[0, count): the most specific spec they all
// match (unknown for none).
ElementSpec MixedElementSpec(const std::vector<std::shared_ptr<const DatasetBase>>& inputs,
                             size_t count);

// What SampleFromDatasets and ChooseFromDatasets share: their inputs, which of them have ended
// (an ended input's iterator is released at once, files and threads with it), and the
// checkpoint of both. The subclass decides which input serves each element.
class MixingIterator : public IteratorBase {
 protected:
  MixingIterator(const DatasetBase* dataset, const IteratorContext& ctx,
                 std::vector<std::unique_ptr<IteratorBase>> inputs);

  size_t num_inputs() const { return inputs_.size(); }
  bool ended(size_t i) const { return inputs_[i] == nullptr; }
  size_t num_live() const;
  // The next element of input i (which must not have ended); at its end, marks it ended.
  absl::StatusOr<std::optional<Element>> NextOf(size_t i);

  // The inputs' states (absent for ended ones) as inputs 0..n-1 of `state`.
  absl::Status SaveInputs(proto::IteratorStateProto* state);
  absl::Status RestoreInputs(const proto::IteratorStateProto& state);

 private:
  std::vector<std::unique_ptr<IteratorBase>> inputs_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_MIXING_ITERATOR_H_
