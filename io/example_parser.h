#ifndef SLUICE_IO_EXAMPLE_PARSER_H_
#define SLUICE_IO_EXAMPLE_PARSER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "io/feature_spec.h"

namespace sluice {

// Parses one serialized tf.train.Example into one tensor per spec entry, in
// spec order: FixedLen entries have the spec's shape (the default value when
// the feature is absent), VarLen entries are 1-D. The bytes are walked once,
// directly (no protobuf messages are built); values are copied only into the
// final tensors.
//
// Accepted as protobuf's parser accepts them: packed and unpacked int64 and
// float lists (occurrences concatenate), unknown fields of any wire type,
// fields in any order, repeated `feature` map entries (the last wins). A
// feature whose Feature holds no list counts as absent. Features that are not
// in the spec are skipped without looking inside their values.
//
// Errors: InvalidArgument for a bad spec or an Example that does not fit it,
// naming the feature ("feature 'vec': expected 3 values for shape [3], got
// 2"); DataLoss for malformed bytes, naming the byte offset.
absl::StatusOr<std::vector<Tensor>> ParseExample(absl::string_view serialized,
                                                 const FeatureSpec& spec);

// A spec validated and indexed once, for parsing many Examples (a Map
// function): Parse() gives what ParseExample() gives, without the per-call
// spec work. Copies share the compiled spec; Parse() is thread-safe.
class ExampleParser {
 public:
  static absl::StatusOr<ExampleParser> Create(FeatureSpec spec);

  absl::StatusOr<std::vector<Tensor>> Parse(absl::string_view serialized) const;
  const FeatureSpec& spec() const;

 private:
  struct Compiled;
  explicit ExampleParser(std::shared_ptr<const Compiled> compiled)
      : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace sluice

#endif  // SLUICE_IO_EXAMPLE_PARSER_H_
