#ifndef SLUICE_DATASET_ELEMENT_SOURCE_H_
#define SLUICE_DATASET_ELEMENT_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace sluice {

// Where an element came from, as the integers that recompute it exactly: a TFRecord's file,
// offset and record number, a Map's element index (its seed), a Repeat's epoch, an Interleave's
// input element. Each node appends its own integers and then its input's, so the source reads
// from the consumer down to the files. A checkpoint saves a buffered element as its source
// (a few dozen bytes) instead of its contents (a decoded image is hundreds of KB), and restoring
// recomputes it; see IteratorBase::DescribeLast and Recompute. Inline up to 8 integers: a
// Prefetch describes every element it buffers, and a heap allocation each cost 7% of its
// per-element time on tiny elements (bench/dataset_overhead_bench).
using ElementSource = absl::InlinedVector<int64_t, 8>;

// Appends `source` to `out` and returns true; false, appending nothing, when it is empty (an
// element without a source). What buffering nodes answer DescribeLast with.
inline bool AppendSource(const ElementSource& source, ElementSource* out) {
  if (source.empty()) return false;
  out->insert(out->end(), source.begin(), source.end());
  return true;
}

// Reads a saved source front to back, each node taking its own integers. A checkpoint is
// untrusted: running past the end is DataLoss, never a read out of bounds.
class SourceCursor {
 public:
  SourceCursor(const int64_t* begin, const int64_t* end) : pos_(begin), end_(end) {}
  explicit SourceCursor(const ElementSource& source)
      : SourceCursor(source.data(), source.data() + source.size()) {}

  // The next integer, read by `node` (named in the error when none is left).
  absl::StatusOr<int64_t> Next(const std::string& node) {
    if (pos_ == end_) {
      return absl::DataLossError(
          absl::StrCat("checkpoint: the saved source of an element ends before ", node));
    }
    return *pos_++;
  }
  // The next integer, which must lie in [lo, hi).
  absl::StatusOr<int64_t> NextIn(const std::string& node, int64_t lo, int64_t hi) {
    absl::StatusOr<int64_t> v = Next(node);
    if (v.ok() && (*v < lo || *v >= hi)) {
      return absl::DataLossError(absl::StrCat("checkpoint: ", node, " cannot recompute element ",
                                              *v, " (expected [", lo, ", ", hi, "))"));
    }
    return v;
  }
  bool done() const { return pos_ == end_; }

 private:
  const int64_t* pos_;
  const int64_t* end_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_ELEMENT_SOURCE_H_
