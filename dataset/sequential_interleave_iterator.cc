#include "dataset/sequential_interleave_iterator.h"

#include <optional>
#include <utility>

#include "dataset/interleave_iterator.h"

namespace sluice::internal {
namespace {

class SequentialInterleaveIterator : public InterleaveIterator {
 public:
  SequentialInterleaveIterator(const InterleaveDataset* d, const IteratorContext& ctx,
                               std::unique_ptr<IteratorBase> input)
      : InterleaveIterator(d, ctx, std::move(input), NodeKind::kInterleave) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    // As for the parallel workers, busy time is all the work the node drives
    // (input, opening, inner reads): what its parallelism would scale.
    ScopedTimer t(&stats().busy_ns);
    return NextInCycle();
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    return SaveState(state, Futures());
  }
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    return RestoreState(state, ctx(), nullptr);
  }

 private:
  // tf.data's InterleaveDatasetOp loop.
  absl::StatusOr<std::optional<Element>> NextInCycle() {
    while (!end_of_input_ || num_open_ > 0) {
      InnerPipeline* current = cycle_[cycle_index_].get();
      if (current != nullptr) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, current->iterator->GetNext());
        if (e) {
          // Only while the input element has a source: SetLastSource needs both.
          SetLastSource(*current, current->input_source.empty() ? ElementSource()
                                                                : SourceOfLast(*current->iterator));
          AdvancePosition();
          return e;
        }
        cycle_[cycle_index_].reset();
        --num_open_;
        AdvanceToNextInCycle();
      } else if (!end_of_input_) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
        if (!in) {
          end_of_input_ = input_ended_ = true;
          continue;
        }
        auto inner = std::make_unique<InnerPipeline>();
        inner->input_source = SourceOfLast(*input_);
        inner->index = next_index_++;
        absl::Status made =
            d_->MakeInner(ctx(), *in, inner->index, &inner->dataset, &inner->iterator);
        if (!made.ok()) return Annotate(made, inner->index);
        inner->input = std::move(*in);
        cycle_[cycle_index_] = std::move(inner);
        ++num_open_;
      } else {
        AdvanceToNextInCycle();
      }
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<IteratorBase> MakeSequentialInterleaveIterator(
    const InterleaveDataset* d, const IteratorContext& ctx, std::unique_ptr<IteratorBase> input) {
  return std::make_unique<SequentialInterleaveIterator>(d, ctx, std::move(input));
}

}  // namespace sluice::internal
