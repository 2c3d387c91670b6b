// Shuffle(buffer_size, {seed, reshuffle_each_iteration}), tf.data's algorithm: keep a buffer of up
// to buffer_size input elements; each output takes a uniformly random slot, which the next call
// refills from the input; once the input ends, the buffer drains in random order.
//
// Random numbers come from a counter-based generator (value i = MixSeed(seed, i)), so a checkpoint
// holds the seed and a counter and restores the generator exactly.
#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class ShuffleDataset : public DatasetBase {
 public:
  ShuffleDataset(std::shared_ptr<const DatasetBase> input, int64_t buffer_size,
                 ShuffleOptions options)
      : DatasetBase("Shuffle", {std::move(input)}), buffer_size_(buffer_size), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  ElementSpec ComputeElementSpec() const override { return inputs()[0]->element_spec(); }
  int64_t Cardinality() const override { return inputs()[0]->Cardinality(); }
  std::string Describe() const override {
    std::string s = absl::StrCat("Shuffle(", buffer_size_);
    if (options_.seed) absl::StrAppend(&s, ", seed=", *options_.seed);
    if (!options_.reshuffle_each_iteration) absl::StrAppend(&s, ", reshuffle_each_iteration=false");
    return s + ")";
  }

  int64_t buffer_size() const { return buffer_size_; }
  // The generator's seed for an iterator made with `ctx`. The salt (which Repeat changes per
  // epoch) is mixed in only when each iteration should get its own order.
  uint64_t SeedFor(const IteratorContext& ctx) const {
    const uint64_t base =
        MixSeed(options_.seed.value_or(ctx.seed), static_cast<uint64_t>(position()));
    return MixSeed(base, options_.reshuffle_each_iteration ? ctx.salt : 0);
  }

 private:
  int64_t buffer_size_;
  ShuffleOptions options_;
};

class ShuffleIterator : public IteratorBase {
 public:
  ShuffleIterator(const ShuffleDataset* d, const IteratorContext& ctx,
                  std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync),
        d_(d),
        input_(std::move(input)),
        seed_(d->SeedFor(ctx)) {
    // Reported, not tuned: the user fixed it.
    stats().buffer_size.DeclareFixed(d->buffer_size());
  }
  ~ShuffleIterator() override { ReleaseInputs(held_); }

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    // Top the buffer up. An input error leaves what was buffered in place; the next call goes on
    // filling.
    while (input_ != nullptr && static_cast<int64_t>(buffer_.size()) < d_->buffer_size()) {
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) {
        input_.reset();  // Ended: frees whatever the input holds.
        break;
      }
      buffered_bytes_ += static_cast<int64_t>(ElementByteSize(*in));
      buffer_.push_back(std::move(*in));
      sources_.push_back(SourceOfLast(*input_));
      ++held_;
      stats().inputs_held.fetch_add(1, std::memory_order_relaxed);
      UpdateStats();
    }
    if (buffer_.empty()) return std::nullopt;
    const size_t slot = Uniform(buffer_.size());
    Element out = std::move(buffer_[slot]);
    last_source_ = std::move(sources_[slot]);
    // The last element fills the hole; the next call appends the refill.
    if (slot + 1 != buffer_.size()) {
      buffer_[slot] = std::move(buffer_.back());
      sources_[slot] = std::move(sources_.back());
    }
    buffer_.pop_back();
    sources_.pop_back();
    buffered_bytes_ -= static_cast<int64_t>(ElementByteSize(out));
    // One element leaves the buffer. Restored ones were never counted, so the count stops at 0;
    // which slot held which does not matter to a count.
    ReleaseInputs(std::min<int64_t>(held_, 1));
    UpdateStats();
    return out;
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["seed"] = std::bit_cast<int64_t>(seed_);
    ints["counter"] = std::bit_cast<int64_t>(counter_);
    ints["input_ended"] = input_ == nullptr;
    for (size_t i = 0; i < buffer_.size(); ++i) {
      BufferedToProto(buffer_[i], sources_[i], state->add_buffer());
    }
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t seed, SavedInt(state, "seed"));
    SLUICE_ASSIGN_OR_RETURN(int64_t counter, SavedInt(state, "counter"));
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "input_ended"));
    seed_ = std::bit_cast<uint64_t>(seed);
    counter_ = std::bit_cast<uint64_t>(counter);
    if (state.buffer_size() > d_->buffer_size()) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", d_->name(), " holds ",
                                              state.buffer_size(), " buffered elements, more than ",
                                              "the buffer_size ", d_->buffer_size()));
    }
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* in, InputState(state, 0));
    const bool input_ended = ended != 0 || in == nullptr;
    // The input first (unless it ended): elements saved as sources are recomputed through it.
    if (!input_ended) SLUICE_RETURN_IF_ERROR(input_->Restore(*in));
    buffer_.clear();
    sources_.clear();
    buffered_bytes_ = 0;
    // The buffer's inputs go; the restored ones come from the checkpoint, not the input.
    ReleaseInputs(held_);
    for (const proto::BufferedResult& r : state.buffer()) {
      ElementSource source;
      SLUICE_ASSIGN_OR_RETURN(auto result,
                              RestoreBuffered(r, input_.get(), &source, d_->element_spec()));
      if (!result.ok() || !result->has_value()) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", d_->name(), " holds an error or an end in its buffer"));
      }
      buffered_bytes_ += static_cast<int64_t>(ElementByteSize(**result));
      buffer_.push_back(*std::move(*result));
      sources_.push_back(std::move(source));
    }
    UpdateStats();
    if (input_ended) input_.reset();
    return absl::OkStatus();
  }

  bool DescribeLastInternal(ElementSource* out) override { return AppendSource(last_source_, out); }
  absl::StatusOr<Element> RecomputeInternal(SourceCursor& source) override {
    if (input_ == nullptr) {
      // The input ended: a fresh one recomputes (it reads nothing until asked).
      if (input_for_recompute_ == nullptr) {
        SLUICE_ASSIGN_OR_RETURN(input_for_recompute_, d_->inputs()[0]->MakeIterator(ctx()));
      }
      return input_for_recompute_->Recompute(source);
    }
    return input_->Recompute(source);
  }

 private:
  // A uniform index in [0, n): rejection sampling removes the modulo bias.
  size_t Uniform(size_t n) {
    const uint64_t bound = n;
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod n
    while (true) {
      const uint64_t r = MixSeed(seed_, counter_++);
      if (r >= threshold) return static_cast<size_t>(r % bound);
    }
  }

  // `n` of the buffered inputs this iterator counted in NodeStats::inputs_held leave it.
  void ReleaseInputs(int64_t n) {
    held_ -= n;
    stats().inputs_held.fetch_sub(n, std::memory_order_relaxed);
  }

  void UpdateStats() {
    stats().buffered_elements.store(static_cast<int64_t>(buffer_.size()),
                                    std::memory_order_relaxed);
    stats().buffered_bytes.store(buffered_bytes_, std::memory_order_relaxed);
  }

  const ShuffleDataset* d_;
  std::unique_ptr<IteratorBase> input_;  // null once the input ended
  std::vector<Element> buffer_;
  std::vector<ElementSource> sources_;                 // parallel to buffer_; empty: saved whole
  ElementSource last_source_;                          // of the element GetNext returned last
  std::unique_ptr<IteratorBase> input_for_recompute_;  // after the input ended
  int64_t buffered_bytes_ = 0;
  int64_t held_ = 0;  // elements of buffer_ taken from input_ (restored ones are not)
  uint64_t seed_;
  uint64_t counter_ = 0;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> ShuffleDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (buffer_size_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": buffer_size must be > 0, got ", buffer_size_));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new ShuffleIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Shuffle(int64_t buffer_size, ShuffleOptions options) const {
  return Dataset(std::make_shared<ShuffleDataset>(base(), buffer_size, options));
}

}  // namespace sluice
