#ifndef SLUICE_DATASET_INTERLEAVE_H_
#define SLUICE_DATASET_INTERLEAVE_H_

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/device_elements.h"
#include "dataset/knob.h"

// Interleave(fn, {cycle_length, block_length, num_parallel_calls,
// deterministic}): keeps a cycle of `cycle_length` inner iterators, each made
// by fn from one input element, and takes `block_length` elements from each in
// turn; an exhausted one is replaced, in its slot, by the next input element.
// This is tf.data's order, and errors do not move the position (the next call
// reads the same inner iterator again).
//
// num_parallel_calls == 1 runs that loop in the caller. Otherwise worker
// std::threads (inner GetNext may block, so not oneTBB tasks) open the next
// input elements ahead of time ("futures", in input order) and prefetch from
// the open inner iterators into bounded per-slot buffers (a block, or up to
// 64 KiB of small elements, refilled from half empty); the consumer walks the
// same cycle over those buffers, so deterministic mode yields exactly the
// sequential order, while deterministic=false takes whatever is ready.
//
// Inner iterator i is made with ctx.ForInner(name(), i). A checkpoint holds the input
// iterator, the cycle position, and for each open slot (and future) the input
// element that created it, its inner iterator's state and its buffered
// results; restore calls fn on the saved element again.
// This header holds the dataset; interleave_iterator.h the cycle both modes share;
// sequential_interleave_iterator.cc and parallel_interleave_iterator.cc the two modes, as
// tf.data splits interleave_dataset_op and parallel_interleave_dataset_op.
namespace sluice::internal {

class InterleaveDataset : public DatasetBase {
 public:
  InterleaveDataset(std::shared_ptr<const DatasetBase> input, DatasetFn fn,
                    InterleaveOptions options)
      : DatasetBase("Interleave", {std::move(input)}), fn_(std::move(fn)), options_(options) {
    DeclareOutputSignature(options_.output_signature);
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override {
    return inputs()[0]->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  std::string Describe() const override {
    std::string s = absl::StrCat("Interleave(cycle_length=", KnobString(options_.cycle_length),
                                 ", block_length=", options_.block_length);
    if (options_.num_parallel_calls != 1) {
      absl::StrAppend(&s, ", num_parallel_calls=", KnobString(options_.num_parallel_calls));
    }
    return s + ")";
  }

  const InterleaveOptions& interleave_options() const { return options_; }

  // The iterator of fn(element), the `index`-th input element, beside the
  // dataset it reads (an iterator does not own its dataset).
  // Thread-safe: parallel workers open inner pipelines concurrently.
  absl::Status MakeInner(const IteratorContext& ctx, Element element, int64_t index,
                         std::shared_ptr<const DatasetBase>* dataset,
                         std::unique_ptr<IteratorBase>* iterator) const {
    // An exception from fn is its error, annotated as a returned one is.
    SLUICE_ASSIGN_OR_RETURN(Dataset inner, ExceptionsAsStatus([&]() -> absl::StatusOr<Dataset> {
                              return fn_(std::move(element));
                            }));
    SLUICE_RETURN_IF_ERROR(CheckInnerPipeline(*this, *inner.base()));
    {
      // Iterator constructors set their node's shared Tunables without
      // atomics; two inner pipelines of this node share those nodes.
      MutexLock l(&make_mu_);
      SLUICE_ASSIGN_OR_RETURN(*iterator, inner.base()->MakeIterator(
                                             ctx.ForInner(name(), static_cast<uint64_t>(index))));
    }
    *dataset = inner.base();
    return absl::OkStatus();
  }

 private:
  DatasetFn fn_;
  InterleaveOptions options_;
  // Guards no data: it serialises the making of inner iterators (see MakeInner).
  mutable Mutex make_mu_;
};

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_INTERLEAVE_H_
