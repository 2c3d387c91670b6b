#ifndef SLUICE_DATASET_COUNTED_INPUT_ITERATOR_H_
#define SLUICE_DATASET_COUNTED_INPUT_ITERATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "dataset/dataset_base.h"

namespace sluice {

// A one-input iterator whose whole state is how many input elements it has handled
// (taken, skipped) out of `count`, and whether the input has ended: Take and Skip.
// It saves and restores that state, under `counter_key` and "ended", and the input's;
// a subclass supplies GetNextInternal.
class CountedInputIterator : public IteratorBase {
 public:
  CountedInputIterator(const DatasetBase* dataset, const IteratorContext& ctx,
                       std::unique_ptr<IteratorBase> input, int64_t count, std::string counter_key);

 protected:
  absl::Status SaveInternal(proto::IteratorStateProto* state) final;
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) final;

  const int64_t count_;
  std::unique_ptr<IteratorBase> input_;
  int64_t counted_ = 0;  // input elements handled so far
  bool ended_ = false;   // the input returned its end

 private:
  const std::string counter_key_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_COUNTED_INPUT_ITERATOR_H_
