// Cache() in memory.
//
// In memory (empty path): an iterator records the elements it passes through; when (and only
// when) its input ends, the recording is published on the dataset, and every iterator made after
// that replays it. A pass cut short, or one whose input returned an error, publishes nothing.
//
// Checkpoints save whether the iterator records or replays, its position, and the elements
// recorded so far (or the whole recording when replaying), so that a checkpoint restored in
// another process resumes exactly and still leaves a complete cache behind.
#include "dataset/memory_cache_iterator.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice::internal {
namespace {

int64_t BytesOf(const std::vector<Element>& elements) {
  int64_t bytes = 0;
  for (const Element& e : elements) bytes += static_cast<int64_t>(ElementByteSize(e));
  return bytes;
}

class MemoryCacheIterator : public IteratorBase {
 public:
  // Replays `replay` when given, else records `input`.
  MemoryCacheIterator(const CacheDataset* d, const IteratorContext& ctx,
                      std::shared_ptr<const CacheDataset::Recording> replay,
                      std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {
    if (replay != nullptr) StartReplay(std::move(replay), 0);
  }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    if (replay_ != nullptr) {
      if (position_ >= static_cast<int64_t>(replay_->size())) return std::nullopt;
      return (*replay_)[position_++];
    }
    if (input_ == nullptr) return std::nullopt;  // Ended after an error: nothing to replay.
    absl::StatusOr<std::optional<Element>> in = input_->GetNext();
    if (!in.ok()) {
      // This pass is no faithful copy of the input any more: it records nothing.
      failed_ = true;
      recorded_.clear();
      recorded_bytes_ = 0;
      UpdateStats(0, 0);
      return in.status();
    }
    if (!in->has_value()) {
      input_.reset();
      if (!failed_) {
        auto done = std::make_shared<const CacheDataset::Recording>(std::move(recorded_));
        d_->Complete(done);
        StartReplay(std::move(done), position_);
      }
      return std::nullopt;
    }
    ++position_;
    if (!failed_) {
      recorded_.push_back(**in);  // Shares the tensors' buffers: no copy.
      recorded_bytes_ += static_cast<int64_t>(ElementByteSize(**in));
      UpdateStats(static_cast<int64_t>(recorded_.size()), recorded_bytes_);
    }
    return in;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["replaying"] = replay_ != nullptr;
    ints["position"] = position_;
    ints["failed"] = failed_;
    const CacheDataset::Recording& elements = replay_ != nullptr ? *replay_ : recorded_;
    for (const Element& e : elements) ElementToProto(e, state->add_buffer()->mutable_element());
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t replaying, SavedInt(state, "replaying"));
    SLUICE_ASSIGN_OR_RETURN(int64_t position, SavedInt(state, "position"));
    SLUICE_ASSIGN_OR_RETURN(int64_t failed, SavedInt(state, "failed"));
    CacheDataset::Recording elements;
    for (const proto::BufferedResult& r : state.buffer()) {
      SLUICE_ASSIGN_OR_RETURN(Element e, RestoreElement(r.element(), d_->element_spec()));
      elements.push_back(std::move(e));
    }
    const auto size = static_cast<int64_t>(elements.size());
    // Replaying: anywhere in the recording; recording: each element returned was recorded,
    // unless an error stopped the recording.
    if (position < 0 || (replaying != 0 && position > size) ||
        (replaying == 0 && failed == 0 && position != size)) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", d_->name(), " is at element ",
                                              position, " of a cache of ", elements.size()));
    }
    if (replaying != 0) {
      // The checkpoint's own recording, which may differ from one this dataset holds (another
      // pass with another seed); it also completes this dataset's cache if it has none.
      auto done = std::make_shared<const CacheDataset::Recording>(std::move(elements));
      d_->Complete(done);
      input_.reset();
      StartReplay(std::move(done), position);
      return absl::OkStatus();
    }
    replay_ = nullptr;
    position_ = position;
    failed_ = failed != 0;
    recorded_ = std::move(elements);
    recorded_bytes_ = BytesOf(recorded_);
    UpdateStats(static_cast<int64_t>(recorded_.size()), recorded_bytes_);
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    if (in == nullptr) {
      input_.reset();  // Ended after an error.
      return absl::OkStatus();
    }
    if (input_ == nullptr) {  // This iterator was made to replay: it needs its input after all.
      SLUICE_ASSIGN_OR_RETURN(input_, d_->inputs()[0]->MakeIterator(ctx()));
    }
    return input_->Restore(*in);
  }

 private:
  void StartReplay(std::shared_ptr<const CacheDataset::Recording> replay, int64_t position) {
    replay_ = std::move(replay);
    position_ = position;
    recorded_.clear();
    UpdateStats(static_cast<int64_t>(replay_->size()), BytesOf(*replay_));
  }

  void UpdateStats(int64_t elements, int64_t bytes) {
    stats().buffered_elements.store(elements, std::memory_order_relaxed);
    stats().buffered_bytes.store(bytes, std::memory_order_relaxed);
  }

  const CacheDataset* d_;
  std::unique_ptr<IteratorBase> input_;  // recording; null when replaying or ended
  std::shared_ptr<const CacheDataset::Recording> replay_;
  CacheDataset::Recording recorded_;
  int64_t recorded_bytes_ = 0;
  int64_t position_ = 0;  // elements returned
  bool failed_ = false;   // the input returned an error during this pass
};

}  // namespace

std::unique_ptr<IteratorBase> MakeMemoryCacheIterator(
    const CacheDataset* d, const IteratorContext& ctx,
    std::shared_ptr<const CacheDataset::Recording> done, std::unique_ptr<IteratorBase> input) {
  return std::make_unique<MemoryCacheIterator>(d, ctx, std::move(done), std::move(input));
}

}  // namespace sluice::internal
