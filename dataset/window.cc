// Window(size, {shift, stride, drop_remainder}): sliding windows over the input, each stacked
// into one element, as tf.data's window(...).flat_map(lambda w: w.batch(size)) gives them.
#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class WindowDataset : public DatasetBase {
 public:
  WindowDataset(std::shared_ptr<const DatasetBase> input, int64_t size, WindowOptions options)
      : DatasetBase("Window", {std::move(input)}), size_(size), options_(options) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return absl::StrCat("Window(", size_, ", shift=", shift(), ", stride=", options_.stride,
                        options_.drop_remainder ? ", drop_remainder" : "", ")");
  }

  // A window starts at every shift-th input element (tf.data's count); with drop_remainder, only
  // where a whole span is left.
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (n < 0) return n;
    if (size_ <= 0 || shift() <= 0 || options_.stride <= 0) return kUnknownCardinality;  // an error
    if (options_.drop_remainder) return n < span() ? 0 : (n - span()) / shift() + 1;
    return n / shift() + (n % shift() != 0 ? 1 : 0);
  }

  // Windows near the end are shorter unless dropped.
  ElementSpec ComputeElementSpec() const override {
    return inputs()[0]->element_spec().Batched(
        options_.drop_remainder && size_ > 0 ? size_ : PartialShape::kUnknownDim);
  }

  int64_t size() const { return size_; }
  int64_t shift() const { return options_.shift.value_or(size_); }
  int64_t stride() const { return options_.stride; }
  bool drop_remainder() const { return options_.drop_remainder; }
  // Input elements one window spans (INT64_MAX where that overflows: Window(INT64_MAX, stride 2)
  // spans everything there is).
  int64_t span() const {
    int64_t span = 0;
    if (__builtin_mul_overflow(size_ - 1, options_.stride, &span) ||
        __builtin_add_overflow(span, 1, &span)) {
      return INT64_MAX;
    }
    return span;
  }

 private:
  int64_t size_;
  WindowOptions options_;
};

class WindowIterator : public IteratorBase {
 public:
  WindowIterator(const WindowDataset* d, const IteratorContext& ctx,
                 std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    // Drop what lies before the next window (kept elements start at base_).
    while (!kept_.empty() && base_ < start_) {
      kept_.pop_front();
      ++base_;
    }
    if (kept_.empty()) base_ = std::max(base_, read_);
    // Read up to the window's end; elements before its start (a shift past the span) are read
    // and dropped.
    int64_t end = 0;  // the window's end, past the int64 limit for a huge shift or span
    if (__builtin_add_overflow(start_, d_->span(), &end)) end = INT64_MAX;
    while (!ended_ && read_ < end) {
      absl::StatusOr<std::optional<Element>> in = input_->GetNext();
      if (!in.ok()) return in.status();
      if (!in->has_value()) {
        ended_ = true;
        break;
      }
      if (read_ >= start_) {
        if (kept_.empty()) base_ = read_;
        kept_.push_back(std::move(**in));
      }
      ++read_;
    }
    const int64_t available = read_ - start_;  // input elements from the window's start on
    if (available <= 0) return std::nullopt;
    const int64_t count = std::min(d_->size(), (available - 1) / d_->stride() + 1);
    if (count < d_->size() && d_->drop_remainder()) return std::nullopt;
    std::vector<const Element*> rows;
    for (int64_t i = 0; i < count; ++i) rows.push_back(&kept_[start_ + i * d_->stride() - base_]);
    // The window is done with, stacked or not: an error takes its place (so IgnoreErrors skips
    // it) and the next call goes on to the next window.
    absl::StatusOr<Element> window = Stack(rows);
    if (__builtin_add_overflow(start_, d_->shift(), &start_)) start_ = INT64_MAX;
    if (!window.ok()) return window.status();
    return *std::move(window);
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["start"] = start_;
    ints["read"] = read_;
    ints["ended"] = ended_;
    // Only the elements a later window uses: those from the next window's start on. The kept
    // elements always end at the last one read.
    const int64_t from = kept_.empty() ? read_ : std::min(std::max(base_, start_), read_);
    ints["base"] = from;
    for (int64_t i = from; i < read_; ++i) {
      ElementToProto(kept_[i - base_], state->add_buffer()->mutable_element());
    }
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(const int64_t start, SavedInt(state, "start"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t read, SavedInt(state, "read"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t ended, SavedInt(state, "ended"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t base, SavedInt(state, "base"));
    const int64_t kept = state.buffer_size();
    // The kept elements are exactly those read from the next window's start on (every element
    // read at or after a window's start is kept), and never more than a window spans: with
    // elements kept, base is the start; without, nothing was read from the start on.
    const bool consistent =
        kept > 0 ? base == start && read == start + kept : base == read && read <= start;
    if (start < 0 || base < 0 || read < 0 || kept > d_->span() || !consistent) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(),
                                              " is at window start ", start, " with ", kept,
                                              " elements kept from ", base, " of ", read, " read"));
    }
    kept_.clear();
    const ElementSpec& spec = d_->inputs()[0]->element_spec();
    for (const proto::BufferedResult& b : state.buffer()) {
      SLUICE_ASSIGN_OR_RETURN(Element e, RestoreElement(b.element(), spec));
      kept_.push_back(std::move(e));
    }
    start_ = start;
    read_ = read;
    base_ = base;
    ended_ = ended != 0;
    return RestoreInput(input_.get(), state);
  }

 private:
  // The rows stacked along a new first dimension, component by component; every row must have
  // the same dtypes and shapes.
  absl::StatusOr<Element> Stack(const std::vector<const Element*>& rows) const {
    const Element& first = *rows[0];
    Element out;
    for (size_t k = 0; k < first.size(); ++k) {
      Shape s = first[k].shape();
      s.InsertDim(0, static_cast<int64_t>(rows.size()));
      Tensor t(first[k].dtype(), std::move(s));
      for (size_t i = 0; i < rows.size(); ++i) {
        const Element& row = *rows[i];
        if (row.size() != first.size() || row[k].dtype() != first[k].dtype() ||
            row[k].shape() != first[k].shape()) {
          return absl::InvalidArgumentError(
              absl::StrCat(d_->name(), ": the elements of window ", start_ / d_->shift(),
                           " differ in component ", k, ": ", ElementDebugString(first), " and ",
                           ElementDebugString(row)));
        }
        SLUICE_RETURN_IF_ERROR(t.CopyIntoRow(static_cast<int64_t>(i), row[k]));
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  const WindowDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  std::deque<Element> kept_;  // input elements base_, base_ + 1, ...
  int64_t base_ = 0;
  int64_t start_ = 0;  // the next window's first input element
  int64_t read_ = 0;   // input elements read
  bool ended_ = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> WindowDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (size_ < 1 || shift() < 1 || options_.stride < 1) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": size ", size_, ", shift ", shift(),
                                                   " and stride ", options_.stride,
                                                   " must all be >= 1"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new WindowIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Window(int64_t size, WindowOptions options) const {
  return Dataset(std::make_shared<WindowDataset>(base(), size, options));
}

}  // namespace sluice
