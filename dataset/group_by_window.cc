// GroupByWindow(key_fn, reduce_fn, window_size), as tf.data's group_by_window. Elements are
// gathered per key; a full group becomes a window dataset, reduce_fn turns it into the dataset
// whose elements are emitted, and at the end of the input the groups left are reduced in
// ascending key order (tf.data's order too: its groups live in a std::map).
//
// An error from key_fn or the window size drops its element and is returned in its place (so
// IgnoreErrors skips it); an input error passes through. A checkpoint holds the groups, the open
// window's elements and its iterator's state; reduce_fn is called again on restore.
#include <map>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/device_elements.h"
#include "dataset/group_window.h"

namespace sluice {
namespace {

class GroupByWindowDataset : public DatasetBase {
 public:
  GroupByWindowDataset(std::shared_ptr<const DatasetBase> input, KeyFn key_fn, ReduceFn reduce_fn,
                       WindowSizeFn window_size_fn, std::string describe,
                       ElementSpec output_signature)
      : DatasetBase("GroupByWindow", {std::move(input)}),
        key_fn_(std::move(key_fn)),
        reduce_fn_(std::move(reduce_fn)),
        window_size_fn_(std::move(window_size_fn)),
        describe_(std::move(describe)) {
    DeclareOutputSignature(std::move(output_signature));
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;
  int64_t Cardinality() const override {
    return inputs()[0]->Cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  std::string Describe() const override { return describe_; }

  absl::StatusOr<int64_t> Key(const Element& e) const { return key_fn_(e); }
  // The window size of `key`, which must be at least 1.
  absl::StatusOr<int64_t> WindowSize(int64_t key) const {
    SLUICE_ASSIGN_OR_RETURN(const int64_t size, window_size_fn_(key));
    if (size < 1) {
      return absl::InvalidArgumentError(absl::StrCat(name(), ": the window size of key ", key,
                                                     " is ", size, "; it must be >= 1"));
    }
    return size;
  }
  // The iterator of reduce_fn(key, window), the `index`-th window, beside the dataset it reads.
  absl::Status MakeReduced(const IteratorContext& ctx, int64_t key,
                           std::shared_ptr<const std::vector<Element>> window, int64_t index,
                           std::shared_ptr<const DatasetBase>* dataset,
                           std::unique_ptr<IteratorBase>* iterator) const {
    SLUICE_ASSIGN_OR_RETURN(Dataset reduced,
                            reduce_fn_(key, Dataset(std::make_shared<GroupWindowDataset>(
                                                std::move(window), inputs()[0]->element_spec()))));
    SLUICE_RETURN_IF_ERROR(CheckInnerPipeline(*this, *reduced.base()));
    SLUICE_ASSIGN_OR_RETURN(*iterator, reduced.base()->MakeIterator(
                                           ctx.ForInner(name(), static_cast<uint64_t>(index))));
    *dataset = reduced.base();
    return absl::OkStatus();
  }

 private:
  KeyFn key_fn_;
  ReduceFn reduce_fn_;
  WindowSizeFn window_size_fn_;
  std::string describe_;
};

class GroupByWindowIterator : public IteratorBase {
 public:
  GroupByWindowIterator(const GroupByWindowDataset* d, const IteratorContext& ctx,
                        std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), d_(d), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (true) {
      if (reduced_ != nullptr) {
        SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, reduced_->GetNext());
        if (e) return e;
        CloseWindow();
      }
      if (input_ended_) {
        if (groups_.empty()) return std::nullopt;
        // Taken out before it is reduced: a failed reduction passes the group, its error in
        // the group's place, instead of failing on it for ever.
        auto first = groups_.begin();
        const int64_t key = first->first;
        std::vector<Element> group = std::move(first->second);
        groups_.erase(first);
        SLUICE_RETURN_IF_ERROR(OpenWindow(key, std::move(group)));
        continue;
      }
      SLUICE_ASSIGN_OR_RETURN(std::optional<Element> in, input_->GetNext());
      if (!in) {
        input_ended_ = true;
        continue;
      }
      const int64_t index = next_index_++;
      absl::StatusOr<int64_t> key = d_->Key(*in);
      if (!key.ok()) return Annotate(key.status(), index);
      absl::StatusOr<int64_t> size = d_->WindowSize(*key);
      if (!size.ok()) return Annotate(size.status(), index);
      std::vector<Element>& group = groups_[*key];
      group.push_back(std::move(*in));
      if (static_cast<int64_t>(group.size()) >= *size) {
        std::vector<Element> full = std::move(group);
        groups_.erase(*key);
        SLUICE_RETURN_IF_ERROR(OpenWindow(*key, std::move(full)));
      }
    }
  }

  // The groups in key order, then the open window, all in `buffer`; their keys and sizes in ints.
  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["next_index"] = next_index_;
    ints["windows"] = windows_;
    ints["input_ended"] = input_ended_;
    ints["groups"] = static_cast<int64_t>(groups_.size());
    int64_t g = 0;
    for (const auto& [key, elements] : groups_) {
      ints[absl::StrCat("group_key_", g)] = key;
      ints[absl::StrCat("group_size_", g)] = static_cast<int64_t>(elements.size());
      for (const Element& e : elements) ElementToProto(e, state->add_buffer()->mutable_element());
      ++g;
    }
    if (reduced_ != nullptr) {
      ints["window_key"] = window_key_;
      ints["window_size"] = static_cast<int64_t>(window_->size());
      for (const Element& e : *window_) ElementToProto(e, state->add_buffer()->mutable_element());
    }
    SLUICE_RETURN_IF_ERROR(SaveInput(input_.get(), state));
    return SaveInput(reduced_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(const int64_t next_index, SavedInt(state, "next_index"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t windows, SavedInt(state, "windows"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t input_ended, SavedInt(state, "input_ended"));
    SLUICE_ASSIGN_OR_RETURN(const int64_t groups, SavedInt(state, "groups"));
    SLUICE_ASSIGN_OR_RETURN(const proto::IteratorStateProto* reduced, InputState(state, 1));
    auto corrupt = [&](const std::string& what) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " ", what));
    };
    // Every buffered element belongs to one group or the window, so the counts are bounded by
    // the buffer and a crafted checkpoint cannot make us allocate more.
    const int64_t buffered = state.buffer_size();
    if (next_index < 0 || windows < 0 || groups < 0 || groups > buffered) {
      return corrupt(absl::StrCat("has ", groups, " groups, ", windows, " windows and ", next_index,
                                  " elements read"));
    }
    std::map<int64_t, std::vector<Element>> restored;
    const ElementSpec& spec = d_->inputs()[0]->element_spec();
    int64_t at = 0;
    auto take = [&](int64_t count, std::vector<Element>* out) -> absl::Status {
      if (count < 1 || count > buffered - at) {
        return corrupt(absl::StrCat("holds a group of ", count, " elements at ", at, " of ",
                                    buffered, " buffered"));
      }
      for (int64_t i = 0; i < count; ++i, ++at) {
        SLUICE_ASSIGN_OR_RETURN(Element e,
                                RestoreElement(state.buffer(static_cast<int>(at)).element(), spec));
        out->push_back(std::move(e));
      }
      return absl::OkStatus();
    };
    for (int64_t g = 0; g < groups; ++g) {
      SLUICE_ASSIGN_OR_RETURN(const int64_t key, SavedInt(state, absl::StrCat("group_key_", g)));
      SLUICE_ASSIGN_OR_RETURN(const int64_t size, SavedInt(state, absl::StrCat("group_size_", g)));
      if (restored.count(key) != 0) return corrupt(absl::StrCat("holds key ", key, " twice"));
      SLUICE_RETURN_IF_ERROR(take(size, &restored[key]));
    }
    std::vector<Element> window;
    int64_t window_key = 0;
    if (reduced != nullptr) {
      SLUICE_ASSIGN_OR_RETURN(window_key, SavedInt(state, "window_key"));
      SLUICE_ASSIGN_OR_RETURN(const int64_t size, SavedInt(state, "window_size"));
      SLUICE_RETURN_IF_ERROR(take(size, &window));
    }
    if (at != buffered) {
      return corrupt(absl::StrCat("holds ", buffered - at, " elements in no group"));
    }
    SLUICE_RETURN_IF_ERROR(RestoreInput(input_.get(), state));
    groups_ = std::move(restored);
    next_index_ = next_index;
    windows_ = windows;
    input_ended_ = input_ended != 0;
    if (reduced == nullptr) return absl::OkStatus();
    // The open window was the last one opened.
    windows_ = windows - 1;
    SLUICE_RETURN_IF_ERROR(OpenWindow(window_key, std::move(window)));
    return reduced_->Restore(*reduced);
  }

 private:
  absl::Status OpenWindow(int64_t key, std::vector<Element> elements) {
    window_ = std::make_shared<const std::vector<Element>>(std::move(elements));
    window_key_ = key;
    const int64_t index = windows_++;
    absl::Status made = d_->MakeReduced(ctx(), key, window_, index, &reduced_dataset_, &reduced_);
    if (!made.ok()) {
      CloseWindow();
      return WithContext(made,
                         absl::StrCat(name(), ": reducing window ", index, " (key ", key, "): "));
    }
    return absl::OkStatus();
  }

  void CloseWindow() {
    reduced_.reset();  // before its dataset
    reduced_dataset_.reset();
    window_.reset();
  }

  const GroupByWindowDataset* d_;
  std::unique_ptr<IteratorBase> input_;
  std::map<int64_t, std::vector<Element>> groups_;      // ordered: the end flushes in key order
  std::shared_ptr<const std::vector<Element>> window_;  // the open window's elements
  std::shared_ptr<const DatasetBase> reduced_dataset_;  // declared first: outlives reduced_
  std::unique_ptr<IteratorBase> reduced_;               // null between windows
  int64_t window_key_ = 0;
  int64_t windows_ = 0;     // windows opened
  int64_t next_index_ = 0;  // input elements read
  bool input_ended_ = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> GroupByWindowDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (!key_fn_ || !reduce_fn_ || !window_size_fn_) {
    return absl::InvalidArgumentError(absl::StrCat(name(), ": a function is missing"));
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new GroupByWindowIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::GroupByWindow(KeyFn key_fn, ReduceFn reduce_fn, int64_t window_size,
                               ElementSpec output_signature) const {
  return Dataset(std::make_shared<GroupByWindowDataset>(
      base(), std::move(key_fn), std::move(reduce_fn),
      [window_size](int64_t) -> absl::StatusOr<int64_t> { return window_size; },
      absl::StrCat("GroupByWindow(window_size=", window_size, ")"), std::move(output_signature)));
}

Dataset Dataset::GroupByWindow(KeyFn key_fn, ReduceFn reduce_fn, WindowSizeFn window_size_fn,
                               ElementSpec output_signature) const {
  return Dataset(std::make_shared<GroupByWindowDataset>(
      base(), std::move(key_fn), std::move(reduce_fn), std::move(window_size_fn),
      "GroupByWindow(window_size_fn)", std::move(output_signature)));
}

}  // namespace sluice
