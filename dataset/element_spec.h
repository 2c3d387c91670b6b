#ifndef SLUICE_DATASET_ELEMENT_SPEC_H_
#define SLUICE_DATASET_ELEMENT_SPEC_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/element.h"
#include "core/tensor_spec.h"

namespace sluice {

// tf.data's Dataset.element_spec: what every element of a dataset is, one TensorSpec (a dtype and
// a shape with unknown dimensions) per component. Each op computes its own from its inputs'.
//
// Where a C++ function makes the elements (Map, FlatMap, Interleave, Scan, GroupByWindow,
// FromGenerator) and nobody declared what it returns, the spec is unknown: tf.data traces the
// function to learn it, sluice cannot. An unknown spec matches every element, so that nothing
// valid is ever refused; declaring one (MapOptions::output_signature and the like) makes it known
// again downstream.
class ElementSpec {
 public:
  // Unknown: any element, of any number of components.
  ElementSpec() = default;
  // Known: elements of exactly these components.
  ElementSpec(std::initializer_list<TensorSpec> components)
      : known_(true), components_(components) {}
  explicit ElementSpec(std::vector<TensorSpec> components)
      : known_(true), components_(std::move(components)) {}
  // The dtypes and exact shapes of `element`.
  static ElementSpec FromElement(const Element& element);
  // The components of every part side by side, in order (Zip, Enumerate); unknown when a part is.
  static ElementSpec Zipped(absl::Span<const ElementSpec> parts);

  bool known() const { return known_; }
  // Empty when unknown.
  const std::vector<TensorSpec>& components() const { return components_; }

  // OK when `element` matches: the same number of components, each of its spec's dtype and of a
  // compatible shape. Otherwise InvalidArgument naming the first difference ("component 1 is
  // bytes[], expected int64[?]"). A few compares per component: cheap enough to run on every
  // element a checkpoint restores.
  absl::Status Check(const Element& element) const;
  // Whether some element may match both.
  bool IsCompatibleWith(const ElementSpec& other) const;
  // The most specific spec that every element of either matches (what Concatenate and
  // SampleFromDatasets yield): component shapes as PartialShape::MostSpecificCompatibleShape;
  // unknown when either is, or when they differ in their number of components or a dtype.
  ElementSpec MostSpecificCompatibleSpec(const ElementSpec& other) const;
  // Every component with a new first dimension `batch_dim` (PartialShape::kUnknownDim when
  // batches may be shorter): Batch, Window.
  ElementSpec Batched(int64_t batch_dim) const;
  // Every component without its first dimension (Unbatch); unknown when a component is a scalar,
  // which has none to remove (unbatching it is an error).
  ElementSpec Unbatched() const;

  // "(int64[], bytes[?, 3])", or "<unknown>".
  std::string DebugString() const;

  friend bool operator==(const ElementSpec& a, const ElementSpec& b) {
    return a.known_ == b.known_ && a.components_ == b.components_;
  }
  friend bool operator!=(const ElementSpec& a, const ElementSpec& b) { return !(a == b); }

 private:
  bool known_ = false;
  std::vector<TensorSpec> components_;
};

}  // namespace sluice

#endif  // SLUICE_DATASET_ELEMENT_SPEC_H_
