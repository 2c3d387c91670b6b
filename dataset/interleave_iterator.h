#ifndef SLUICE_DATASET_INTERLEAVE_ITERATOR_H_
#define SLUICE_DATASET_INTERLEAVE_ITERATOR_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"
#include "dataset/interleave.h"

namespace sluice::internal {

using Result = absl::StatusOr<std::optional<Element>>;

// One inner pipeline: the input element that made it (kept for checkpoints),
// its dataset and iterator, and in parallel mode its buffered results.
struct InnerPipeline {
  int64_t index = -1;  // of its input element; also its salt
  Element input;
  std::shared_ptr<const DatasetBase> dataset;  // declared first: outlives `iterator`
  std::unique_ptr<IteratorBase> iterator;      // null once ended, or when making it failed
  std::deque<Result> buffer;
  int64_t buffered_bytes = 0;  // of the elements in `buffer` (parallel mode)
  // Parallel to `buffer` (parallel mode): each element's source in the inner pipeline, or empty.
  std::deque<ElementSource> sources;
  // The input element's source (element_source.h); empty when the input cannot describe it.
  ElementSource input_source;
  bool opening = false;  // a worker is making its iterator (a future only)
  bool busy = false;     // a worker is opening it or in its GetNext
  bool ended = false;    // its end is in `buffer` (or was taken from it)
  bool failed = false;   // a future whose making failed: `buffer` holds the error
};

using Futures = std::deque<std::unique_ptr<InnerPipeline>>;

// The cycle position and checkpoint format shared by both modes.
class InterleaveIterator : public IteratorBase {
 public:
  InterleaveIterator(const InterleaveDataset* d, const IteratorContext& ctx,
                     std::unique_ptr<IteratorBase> input, NodeKind kind)
      : IteratorBase(d, ctx, kind), d_(d), input_(std::move(input)) {
    const int requested = d->interleave_options().cycle_length;
    Tunable& c = stats().cycle_length;
    const int threads = std::max(1, ctx.runtime->num_threads());
    if (requested == kAutotune &&
        d->interleave_options().deterministic.value_or(ctx.deterministic())) {
      // The order depends on the cycle: tuned by how fast things ran, it would differ between two
      // runs from the second epoch on. As tf.data: the arena's thread count, fixed.
      c.DeclareFixed(threads);
    } else {
      c.DeclareFromOption(requested, /*autotune_max=*/threads);
    }
    // Read once per iterator: changing it mid-stream would change the order.
    // A later iterator of this node (the next epoch) picks up a new value.
    cycle_length_ = std::max<int64_t>(1, c.value.load());
    block_length_ = d->interleave_options().block_length;
    cycle_.resize(static_cast<size_t>(cycle_length_));
  }

 protected:
  // The source of an element of `inner` whose source there is `inner_source`: the input
  // element's index and source, then `inner_source`; empty when either is.
  void SetLastSource(const InnerPipeline& inner, const ElementSource& inner_source) {
    last_source_.clear();
    if (inner.input_source.empty() || inner_source.empty()) return;
    last_source_.push_back(inner.index);
    last_source_.insert(last_source_.end(), inner.input_source.begin(), inner.input_source.end());
    last_source_.insert(last_source_.end(), inner_source.begin(), inner_source.end());
  }
  bool DescribeLastInternal(ElementSource* out) override { return AppendSource(last_source_, out); }
  // Recomputes the input element, makes its inner pipeline again (as it was made: same index,
  // same salt) and has it recompute the element.
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t index, source.NextIn(name(), 0, INT64_MAX));
    SLUICE_ASSIGN_OR_RETURN(Element in, input_->Recompute(source));
    // Consecutive elements of a buffer mostly come from the few files open at the time.
    auto it = recompute_inners_.find(index);
    if (it == recompute_inners_.end()) {
      if (recompute_inners_.size() >= kRecomputeInnersKept) {
        recompute_inners_.erase(recompute_inners_.begin());
      }
      InnerPipeline inner;
      absl::Status made =
          d_->MakeInner(InnerContext(), std::move(in), index, &inner.dataset, &inner.iterator);
      if (!made.ok()) return Annotate(made, index);
      it = recompute_inners_.emplace(index, std::move(inner)).first;
    }
    return it->second.iterator->Recompute(source);
  }
  // The context inner pipelines are made in.
  virtual const IteratorContext& InnerContext() const { return ctx(); }

  void AdvanceToNextInCycle() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % cycle_length_;
  }
  void AdvancePosition() {
    if (++block_index_ == block_length_) AdvanceToNextInCycle();
  }

  absl::Status SaveState(proto::IteratorStateProto* state, const Futures& futures) {
    auto& ints = *state->mutable_ints();
    ints["cycle_length"] = cycle_length_;
    ints["cycle_index"] = cycle_index_;
    ints["block_index"] = block_index_;
    ints["num_open"] = num_open_;
    ints["next_index"] = next_index_;
    ints["end_of_input"] = end_of_input_;
    ints["input_ended"] = input_ended_;
    ints["num_futures"] = static_cast<int64_t>(futures.size());
    SLUICE_RETURN_IF_ERROR(SaveInput(input_.get(), state));
    for (const auto& slot : cycle_) {
      state->add_input_present(slot != nullptr);
      proto::IteratorStateProto* out = state->add_inputs();
      if (slot != nullptr) SLUICE_RETURN_IF_ERROR(SaveInner(*slot, out));
    }
    for (const auto& future : futures) {
      state->add_input_present(true);
      SLUICE_RETURN_IF_ERROR(SaveInner(*future, state->add_inputs()));
    }
    return absl::OkStatus();
  }

  // Inner iterators are remade in `inner_ctx` (salted per input element).
  absl::Status RestoreState(const proto::IteratorStateProto& state,
                            const IteratorContext& inner_ctx, Futures* futures) {
    SLUICE_ASSIGN_OR_RETURN(cycle_length_, SavedInt(state, "cycle_length"));
    SLUICE_ASSIGN_OR_RETURN(cycle_index_, SavedInt(state, "cycle_index"));
    SLUICE_ASSIGN_OR_RETURN(block_index_, SavedInt(state, "block_index"));
    SLUICE_ASSIGN_OR_RETURN(num_open_, SavedInt(state, "num_open"));
    SLUICE_ASSIGN_OR_RETURN(next_index_, SavedInt(state, "next_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t end_of_input, SavedInt(state, "end_of_input"));
    SLUICE_ASSIGN_OR_RETURN(int64_t input_ended, SavedInt(state, "input_ended"));
    SLUICE_ASSIGN_OR_RETURN(int64_t num_futures, SavedInt(state, "num_futures"));
    end_of_input_ = end_of_input != 0;
    input_ended_ = input_ended != 0;
    // A checkpoint the code would never write can leave the loop waiting for a slot or a count
    // that nothing will ever change: refuse it (found by iterator_restore_fuzzer).
    if (cycle_length_ < 1 || cycle_index_ < 0 || cycle_index_ >= cycle_length_ || num_futures < 0 ||
        (num_futures > 0 && futures == nullptr) ||
        state.inputs_size() != 1 + cycle_length_ + num_futures || block_index_ < 0 ||
        block_index_ >= block_length_ || next_index_ < 0 || num_open_ < 0 ||
        num_open_ > cycle_length_ || (end_of_input_ && (!input_ended_ || num_futures > 0))) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", state.node(), " has an inconsistent cycle"));
    }
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    if (in != nullptr) SLUICE_RETURN_IF_ERROR(input_->Restore(*in));
    cycle_.clear();
    cycle_.resize(static_cast<size_t>(cycle_length_));
    int64_t open = 0;
    for (int64_t s = 0; s < cycle_length_; ++s) {
      SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* slot,
                              InputState(state, static_cast<int>(1 + s)));
      if (slot != nullptr) {
        SLUICE_ASSIGN_OR_RETURN(
            cycle_[s], RestoreInner(*slot, inner_ctx,
                                    futures == nullptr ? Role::kSequentialSlot : Role::kSlot));
        ++open;
      }
    }
    if (open != num_open_) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " counts ", num_open_,
                                              " open slots, and holds ", open));
    }
    for (int64_t f = 0; f < num_futures; ++f) {
      SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* future,
                              InputState(state, static_cast<int>(1 + cycle_length_ + f)));
      if (future == nullptr) return absl::DataLossError("interleave checkpoint lacks a future");
      SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<InnerPipeline> inner,
                              RestoreInner(*future, inner_ctx, Role::kFuture));
      futures->push_back(std::move(inner));
    }
    return absl::OkStatus();
  }

  const InterleaveDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  int64_t cycle_length_ = 1;
  int64_t block_length_ = 1;
  std::vector<std::unique_ptr<InnerPipeline>> cycle_;  // null: an empty slot
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int64_t num_open_ = 0;
  int64_t next_index_ = 0;     // index of the next input element
  bool end_of_input_ = false;  // the cycle has seen the end of the input
  bool input_ended_ = false;   // the input returned its end (parallel: maybe earlier)
  ElementSource last_source_;  // of the element GetNext returned last

 private:
  static constexpr size_t kRecomputeInnersKept = 16;
  std::map<int64_t, InnerPipeline> recompute_inners_;  // by input element index

  absl::Status SaveInner(const InnerPipeline& inner, proto::IteratorStateProto* out) {
    out->set_node(absl::StrCat(dataset()->name(), " slot"));
    auto& ints = *out->mutable_ints();
    ints["index"] = inner.index;
    ints["ended"] = inner.ended;
    ints["failed"] = inner.failed;
    if (inner.iterator != nullptr) {
      proto::ElementProto element;
      ElementToProto(inner.input, &element);
      (*out->mutable_blobs())["input_element"] = element.SerializeAsString();
    }
    out->mutable_input_source()->Add(inner.input_source.begin(), inner.input_source.end());
    // Elements go as their sources while the iterator that recomputes them lives.
    const bool sources = inner.iterator != nullptr && inner.sources.size() == inner.buffer.size();
    for (size_t i = 0; i < inner.buffer.size(); ++i) {
      BufferedToProto(inner.buffer[i], sources ? inner.sources[i] : ElementSource(),
                      out->add_buffer());
    }
    return SaveInput(inner.iterator.get(), out);
  }

  // Where an inner pipeline was saved: what it may hold differs.
  enum class Role {
    kSequentialSlot,  // an iterator, nothing buffered
    kSlot,            // a parallel slot: its iterator, or its end (still buffered)
    kFuture,          // as a parallel slot, or a failure to make it (its one error)
  };

  absl::StatusOr<std::unique_ptr<InnerPipeline>> RestoreInner(const proto::IteratorStateProto& p,
                                                              const IteratorContext& inner_ctx,
                                                              Role role) {
    auto inner = std::make_unique<InnerPipeline>();
    SLUICE_ASSIGN_OR_RETURN(inner->index, SavedInt(p, "index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(p, "ended"));
    SLUICE_ASSIGN_OR_RETURN(int64_t failed, SavedInt(p, "failed"));
    inner->ended = ended != 0;
    inner->failed = failed != 0;
    int64_t ends = 0;
    bool recompute = false;
    for (const proto::BufferedResult& b : p.buffer()) {
      // An element saved as a source stands as an empty one until its iterator recomputes it.
      Result r = Element();
      if (b.source_size() == 0) {
        SLUICE_ASSIGN_OR_RETURN(r, ResultFromProto(b));
      }
      recompute = recompute || b.source_size() > 0;
      ends += IsEndOfSequence(r);
      inner->buffer.push_back(std::move(r));
      inner->sources.emplace_back(b.source().begin(), b.source().end());
    }
    inner->input_source.assign(p.input_source().begin(), p.input_source().end());
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* it_state, InputState(p, 0));
    // What the loops rely on: an iterator exactly while the pipeline can still be read; its end
    // buffered last, once, exactly when it ended; a failure only in a future, as its one error
    // (index -1 when the input itself failed).
    const bool end_last = !inner->buffer.empty() && IsEndOfSequence(inner->buffer.back());
    const bool consistent =
        inner->index >= (inner->failed ? -1 : 0) &&
        (it_state != nullptr) == (!inner->ended && !inner->failed) &&
        ends == (inner->ended ? 1 : 0) && inner->ended == end_last &&
        (!inner->failed || (role == Role::kFuture && !inner->ended && inner->buffer.size() == 1 &&
                            !inner->buffer.front().ok())) &&
        (role != Role::kSequentialSlot || (inner->buffer.empty() && it_state != nullptr));
    if (!consistent) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", p.node(), " is inconsistent: ", p.buffer_size(),
                       " buffered with ", ends, " end(s), ended ", ended, ", failed ", failed,
                       it_state != nullptr ? ", with" : ", without", " an iterator"));
    }
    if (it_state == nullptr) {
      if (recompute) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", p.node(), " holds sources without an iterator"));
      }
      SLUICE_RETURN_IF_ERROR(CheckRestoredBuffer(*inner));
      return inner;
    }
    auto blob = p.blobs().find("input_element");
    proto::ElementProto element;
    if (blob == p.blobs().end() || !element.ParseFromString(blob->second)) {
      return absl::DataLossError(
          absl::StrCat("checkpoint of ", p.node(), " lacks the input element of its slot"));
    }
    // fn is about to see it: it must be one of the input's elements.
    SLUICE_ASSIGN_OR_RETURN(inner->input, RestoreElement(element, d_->inputs()[0]->element_spec()));
    absl::Status made =
        d_->MakeInner(inner_ctx, inner->input, inner->index, &inner->dataset, &inner->iterator);
    if (!made.ok()) return Annotate(made, inner->index);
    SLUICE_RETURN_IF_ERROR(inner->iterator->Restore(*it_state));
    for (size_t i = 0; i < inner->buffer.size(); ++i) {
      if (inner->sources[i].empty()) continue;
      SLUICE_ASSIGN_OR_RETURN(
          inner->buffer[i], BufferedFromProto(p.buffer(static_cast<int>(i)), inner->iterator.get(),
                                              &inner->sources[i]));
    }
    SLUICE_RETURN_IF_ERROR(CheckRestoredBuffer(*inner));
    return inner;
  }

  // Every result an inner pipeline buffered must be one of this node's elements, and of its
  // inner dataset's when it has one (which is known more often: Interleave(TFRecord) yields
  // records however its function was declared).
  absl::Status CheckRestoredBuffer(const InnerPipeline& inner) const {
    for (const Result& r : inner.buffer) {
      SLUICE_RETURN_IF_ERROR(CheckRestored(r, d_->element_spec()));
      if (inner.dataset != nullptr) {
        SLUICE_RETURN_IF_ERROR(CheckRestored(r, inner.dataset->element_spec()));
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_INTERLEAVE_ITERATOR_H_
