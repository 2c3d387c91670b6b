#include "dataset/buffered_entry.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset_base.h"

namespace sluice {

void CountBuffered(NodeStats& stats, BufferedEntry& e) {
  e.counted = !e.result.ok() || e.result->has_value();
  e.bytes = e.result.ok() && e.result->has_value()
                ? static_cast<int64_t>(ElementByteSize(**e.result))
                : 0;
  if (!e.counted) return;
  stats.buffered_elements.fetch_add(1, std::memory_order_relaxed);
  stats.buffered_bytes.fetch_add(e.bytes, std::memory_order_relaxed);
}

void UncountBuffered(NodeStats& stats, const BufferedEntry& e) {
  if (!e.counted) return;
  stats.buffered_elements.fetch_sub(1, std::memory_order_relaxed);
  stats.buffered_bytes.fetch_sub(e.bytes, std::memory_order_relaxed);
}

absl::StatusOr<SavedBuffer> ReadSavedBuffer(const proto::IteratorStateProto& state,
                                            const IteratorBase& owner, IteratorBase* recompute) {
  SavedBuffer saved;
  SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "input_ended"));
  saved.input_ended = ended != 0;
  const ElementSpec& spec = owner.dataset()->element_spec();
  for (const proto::BufferedResult& r : state.buffer()) {
    ElementSource source;
    SLUICE_ASSIGN_OR_RETURN(auto result, owner.RestoreBuffered(r, recompute, &source, spec));
    saved.results.push_back(std::move(result));
    saved.sources.push_back(std::move(source));
  }
  const bool ends = !saved.results.empty() && IsEndOfSequence(saved.results.back());
  if (saved.input_ended != ends) {
    return absl::DataLossError(
        absl::StrCat("checkpoint of ", state.node(), " has an inconsistent end of input"));
  }
  return saved;
}

}  // namespace sluice
