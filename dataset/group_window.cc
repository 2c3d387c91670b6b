#include "dataset/group_window.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

class GroupWindowIterator : public IteratorBase {
 public:
  GroupWindowIterator(const GroupWindowDataset* d, const IteratorContext& ctx)
      : IteratorBase(d, ctx, NodeKind::kSync), elements_(d->elements()) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    if (next_ >= static_cast<int64_t>(elements_.size())) return std::nullopt;
    return elements_[static_cast<size_t>(next_++)];
  }
  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    (*state->mutable_ints())["next"] = next_;
    return absl::OkStatus();
  }
  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(const int64_t next, SavedInt(state, "next"));
    if (next < 0 || next > static_cast<int64_t>(elements_.size())) {
      return absl::DataLossError(absl::StrCat("checkpoint of ", state.node(), " is at element ",
                                              next, " of a window of ", elements_.size()));
    }
    next_ = next;
    return absl::OkStatus();
  }

 private:
  const std::vector<Element>& elements_;
  int64_t next_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<IteratorBase>> GroupWindowDataset::MakeIterator(
    const IteratorContext& ctx) const {
  return std::unique_ptr<IteratorBase>(new GroupWindowIterator(this, ctx));
}

std::string GroupWindowDataset::Describe() const {
  return absl::StrCat("GroupWindow(", elements_->size(), ")");
}

}  // namespace sluice
