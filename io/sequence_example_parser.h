#ifndef SLUICE_IO_SEQUENCE_EXAMPLE_PARSER_H_
#define SLUICE_IO_SEQUENCE_EXAMPLE_PARSER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "io/feature_spec.h"

namespace sluice {

struct ParsedSequenceExample {
  std::vector<Tensor> context;           // per context spec entry, as ParseExample gives them
  std::vector<Tensor> sequence;          // FixedLen: [T, shape...]; VarLen: the steps' values, flat
  std::vector<Tensor> sequence_lengths;  // per sequence entry: int64[T], the values in each step
};

// Parses one serialized tf.train.SequenceExample: the context features by
// `context_spec` (as ParseExample, validated by ValidateSpec), the feature
// lists by `sequence_spec` (validated by ValidateSequenceSpec). A FixedLen
// sequence entry needs shape.num_elements() values in every step; an absent
// feature_list is an error unless allow_missing is set (then T = 0); a VarLen
// sequence entry that is absent yields no steps. A step whose Feature holds
// no list has zero values. Wire-format leniency and errors as ParseExample.
absl::StatusOr<ParsedSequenceExample> ParseSequenceExample(absl::string_view serialized,
                                                           const FeatureSpec& context_spec,
                                                           const FeatureSpec& sequence_spec);

// Both specs validated and indexed once, for parsing many SequenceExamples.
// Copies share the compiled specs; Parse() is thread-safe.
class SequenceExampleParser {
 public:
  static absl::StatusOr<SequenceExampleParser> Create(FeatureSpec context_spec,
                                                      FeatureSpec sequence_spec);

  absl::StatusOr<ParsedSequenceExample> Parse(absl::string_view serialized) const;
  const FeatureSpec& context_spec() const;
  const FeatureSpec& sequence_spec() const;

 private:
  struct Compiled;
  explicit SequenceExampleParser(std::shared_ptr<const Compiled> compiled)
      : compiled_(std::move(compiled)) {}
  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace sluice

#endif  // SLUICE_IO_SEQUENCE_EXAMPLE_PARSER_H_
