#ifndef SLUICE_IO_FEATURE_SPEC_H_
#define SLUICE_IO_FEATURE_SPEC_H_

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace sluice {

// A feature with a known number of values, as tf.io.FixedLenFeature (and, in a
// SequenceExample's sequence spec, tf.io.FixedLenSequenceFeature).
struct FixedLenFeature {
  DType dtype;       // kInt64, kFloat32 or kBytes (the three tf.train.Feature kinds)
  Shape shape = {};  // {} = scalar; values are read row-major
  std::optional<Tensor> default_value;  // used when the feature is absent; else absence is an error
  // Sequence specs only (as FixedLenSequenceFeature's allow_missing): an absent
  // feature_list yields zero steps instead of an error. Rejected elsewhere.
  bool allow_missing = false;
};

// A feature with any number of values; yields a 1-D tensor of however many
// there are (empty when the feature is absent).
struct VarLenFeature {
  DType dtype;
};

using FeatureConfig = std::variant<FixedLenFeature, VarLenFeature>;

// What to extract from an Example, in order: parsers return one tensor per
// entry, in this order.
struct FeatureSpec {
  std::vector<std::pair<std::string, FeatureConfig>> features;
};

// The dtype a config yields.
DType ConfigDType(const FeatureConfig& config);

// Checks a spec for Examples and SequenceExample contexts: every dtype is one
// of int64, float32, bytes; no negative dimension; a default value has the
// spec's dtype and shape; no name appears twice; allow_missing is unset.
absl::Status ValidateSpec(const FeatureSpec& spec);
// Checks a SequenceExample sequence spec: as ValidateSpec, except that
// FixedLen entries may set allow_missing and may not have a default value
// (a step is never absent: a feature_list has the steps it has).
absl::Status ValidateSequenceSpec(const FeatureSpec& spec);

namespace internal {

// Finds a spec entry by feature name. Writers emit map keys sorted (TF's
// writers and protobuf's deterministic mode do), so each lookup first tries
// the entry after the previous hit, which makes the common case one
// comparison; otherwise a linear scan for small specs, a hash map for large.
class FeatureIndex {
 public:
  // Views the names in `spec`, which must outlive the index. Fails when a
  // name appears twice.
  static absl::StatusOr<FeatureIndex> Build(const FeatureSpec& spec);

  // The position of `name` in the spec, or -1. `hint` is per-parse state:
  // start it at 0 and pass it to every lookup of one message.
  int Find(absl::string_view name, size_t* hint) const {
    const size_t h = *hint;
    if (h < sorted_.size() && sorted_[h].first == name) {
      *hint = h + 1;
      return sorted_[h].second;
    }
    return FindSlow(name, hint);
  }

  size_t size() const { return sorted_.size(); }

 private:
  static constexpr size_t kLinearMax = 8;
  int FindSlow(absl::string_view name, size_t* hint) const;

  // (name, spec position), sorted by name.
  absl::InlinedVector<std::pair<absl::string_view, int>, kLinearMax> sorted_;
  // name -> position in sorted_; only for specs over kLinearMax entries.
  absl::flat_hash_map<absl::string_view, size_t> by_name_;
};

// Validates `spec` (as ValidateSequenceSpec when `sequence`, else as
// ValidateSpec) and indexes it.
absl::StatusOr<FeatureIndex> IndexSpec(const FeatureSpec& spec, bool sequence);

}  // namespace internal
}  // namespace sluice

#endif  // SLUICE_IO_FEATURE_SPEC_H_
