#ifndef SLUICE_DATASET_BUFFERED_ENTRY_H_
#define SLUICE_DATASET_BUFFERED_ENTRY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/element.h"
#include "dataset/element_source.h"
#include "dataset/node_stats.h"
#include "dataset/proto/iterator_state.pb.h"

namespace sluice {

// What a prefetching node's buffer holds (Prefetch, train::data::PrefetchToDevice): an element,
// an error in its place, or the end marker, with what it adds to the node's stats.
struct BufferedEntry {
  absl::StatusOr<std::optional<Element>> result;
  ElementSource source;  // the element's, when its input described it (element_source.h)
  int64_t bytes = 0;
  bool counted = false;  // an element or error, not the end marker
};

// Adds `e` (not the end marker) to the node's buffered elements and bytes, and remembers that
// it did; UncountBuffered takes it out again when the entry leaves the buffer.
void CountBuffered(NodeStats& stats, BufferedEntry& e);
void UncountBuffered(NodeStats& stats, const BufferedEntry& e);

// What a prefetching node saved: whether its input had ended (the "input_ended" int) and its
// buffer in order. The buffer ends with the end marker exactly when the input had ended, or the
// consumer would wait forever (or stop early): DataLoss naming the node otherwise. Elements saved
// as sources are recomputed by `recompute` (the node's restored input, or the node itself), and
// their sources returned beside them (empty for the others). Every element must match the
// element_spec of `owner`, the node whose buffer it is (IteratorBase::CheckRestored).
struct SavedBuffer {
  bool input_ended = false;
  std::vector<absl::StatusOr<std::optional<Element>>> results;
  std::vector<ElementSource> sources;  // parallel to results
};
class IteratorBase;
absl::StatusOr<SavedBuffer> ReadSavedBuffer(const proto::IteratorStateProto& state,
                                            const IteratorBase& owner,
                                            IteratorBase* recompute = nullptr);

}  // namespace sluice

#endif  // SLUICE_DATASET_BUFFERED_ENTRY_H_
