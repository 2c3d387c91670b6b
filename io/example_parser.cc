#include "io/example_parser.h"

#include <utility>

#include "absl/container/inlined_vector.h"
#include "core/status_macros.h"
#include "io/feature_wire.h"

namespace sluice {
namespace {

// Example: features = 1 (Features). A repeated occurrence merges into the
// first, as protobuf merges a repeated message field, so every one is walked.
absl::StatusOr<std::vector<Tensor>> ParseWith(absl::string_view serialized, const FeatureSpec& spec,
                                              const internal::FeatureIndex& index) {
  const char* origin = serialized.data();
  absl::InlinedVector<internal::MapSlot, 8> slots(spec.features.size());
  internal::WireReader reader(serialized, origin);
  internal::WireField field;
  size_t hint = 0;
  while (!reader.done()) {
    SLUICE_RETURN_IF_ERROR(reader.Next(&field));
    if (field.number == 1 && field.type == internal::WireType::kLen) {
      SLUICE_RETURN_IF_ERROR(
          internal::CollectMapValues(field.bytes, origin, index, &hint, absl::MakeSpan(slots)));
    }
  }
  std::vector<Tensor> out;
  SLUICE_RETURN_IF_ERROR(internal::MaterializeFeatures(spec, slots, origin, &out));
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> ParseExample(absl::string_view serialized,
                                                 const FeatureSpec& spec) {
  absl::StatusOr<internal::FeatureIndex> index = internal::IndexSpec(spec, /*sequence=*/false);
  if (!index.ok()) return internal::Prefixed("ParseExample: ", index.status());
  absl::StatusOr<std::vector<Tensor>> out = ParseWith(serialized, spec, *index);
  if (!out.ok()) return internal::Prefixed("ParseExample: ", out.status());
  return out;
}

struct ExampleParser::Compiled {
  FeatureSpec spec;
  internal::FeatureIndex index;  // Views the names in `spec`.
};

absl::StatusOr<ExampleParser> ExampleParser::Create(FeatureSpec spec) {
  auto compiled = std::make_shared<Compiled>();
  compiled->spec = std::move(spec);
  absl::StatusOr<internal::FeatureIndex> index =
      internal::IndexSpec(compiled->spec, /*sequence=*/false);
  if (!index.ok()) return internal::Prefixed("ExampleParser: ", index.status());
  compiled->index = *std::move(index);
  return ExampleParser(std::move(compiled));
}

absl::StatusOr<std::vector<Tensor>> ExampleParser::Parse(absl::string_view serialized) const {
  absl::StatusOr<std::vector<Tensor>> out =
      ParseWith(serialized, compiled_->spec, compiled_->index);
  if (!out.ok()) return internal::Prefixed("ParseExample: ", out.status());
  return out;
}

const FeatureSpec& ExampleParser::spec() const { return compiled_->spec; }

}  // namespace sluice
