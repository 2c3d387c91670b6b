#include "train/fit/epoch_iterator.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/backend/transfer.h"

namespace sluice::train::fit {
namespace {

// Enumerate makes the index; a checkpoint's held-back element, which no Enumerate made, must
// have one too. (Elements read are checked as well: a pipeline whose element_spec is unknown
// restores whatever its checkpoint's buffers hold.)
absl::Status CheckIndexed(const Element& e) {
  if (e.empty() || e[0].dtype() != DType::kInt64 || e[0].rank() != 0) {
    return absl::DataLossError(absl::StrCat(
        "an element without its pass index (int64 scalar) first: ", ElementDebugString(e, 2),
        "; was the input's position restored from a corrupt checkpoint?"));
  }
  return absl::OkStatus();
}

Dataset Indexed(const Dataset& data, std::optional<uint64_t> seed) {
  Dataset pipeline = data.Enumerate().Repeat();
  if (seed) pipeline = pipeline.WithOptions(Options{.seed = *seed});
  return pipeline;
}

}  // namespace

EpochIterator::EpochIterator(const Dataset& data, std::optional<uint64_t> seed)
    : indexed_(Indexed(data, seed)) {
  element_spec_ = indexed_.element_spec();
  iterator_ = indexed_.MakeIterator();
}

absl::StatusOr<std::optional<Element>> EpochIterator::Next() {
  if (held_back_) {
    std::optional<Element> e = std::move(held_back_);
    held_back_.reset();
    return e;
  }
  read_ = true;
  absl::StatusOr<std::optional<Element>> next = iterator_->GetNext();
  if (next.ok() && next->has_value()) SLUICE_RETURN_IF_ERROR(CheckIndexed(**next));
  return next;
}

absl::Status EpochIterator::SkipToNextPass() {
  // The held-back element, when set, is this rank's next: the next pass's first (kept), or one
  // of this pass's that the epoch ended before (skipped, with the rest of the pass).
  while (true) {
    if (held_back_ && PassIndex(*held_back_) == 0) return absl::OkStatus();
    held_back_.reset();
    read_ = true;
    absl::StatusOr<std::optional<Element>> next = iterator_->GetNext();
    SLUICE_RETURN_IF_ERROR(WithContext(next.status(), "Fit: reading the training data: "));
    if (!next->has_value()) return absl::OkStatus();
    SLUICE_RETURN_IF_ERROR(WithContext(CheckIndexed(**next), "Fit: reading the training data: "));
    held_back_ = std::move(*next);
  }
}

absl::Status EpochIterator::Save(RankPosition& position) {
  SLUICE_ASSIGN_OR_RETURN(std::string state, iterator_->Save());
  position.iterator_state = std::move(state);
  if (held_back_) {
    // Prefetched to the device: the checkpoint holds host copies.
    SLUICE_ASSIGN_OR_RETURN(position.pending_element, backend::ElementToHost(*held_back_));
  }
  return absl::OkStatus();
}

absl::Status EpochIterator::Restore(RankPosition& position, absl::string_view path) {
  if (read_) {
    iterator_.reset();  // its threads and buffers go before the new one's come
    iterator_ = indexed_.MakeIterator();
    read_ = false;
  }
  if (position.iterator_state) {
    SLUICE_RETURN_IF_ERROR(WithContext(iterator_->Restore(*position.iterator_state),
                                       absl::StrCat(path, ": the input pipeline's position: ")));
  }
  if (position.pending_element) {
    SLUICE_RETURN_IF_ERROR(
        WithContext(CheckIndexed(*position.pending_element),
                    absl::StrCat(path, ": the element held for the next step: ")));
    // It goes to the model as it is: of another type than the pipeline's, it is no element of it.
    if (absl::Status s = element_spec_.Check(*position.pending_element); !s.ok()) {
      return absl::DataLossError(absl::StrCat(path, ": the element held for the next step is not ",
                                              element_spec_.DebugString(), ": ", s.message()));
    }
  }
  held_back_ = std::move(position.pending_element);
  return absl::OkStatus();
}

}  // namespace sluice::train::fit
