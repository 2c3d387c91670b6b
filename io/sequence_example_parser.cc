#include "io/sequence_example_parser.h"

#include <utility>
#include <variant>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "io/feature_wire.h"

namespace sluice {
namespace {

// The tensors for one sequence spec entry from its FeatureList payloads
// (several when the map entry repeated its value field: they concatenate).
absl::Status SequenceTensors(absl::string_view name, const FeatureConfig& config,
                             const internal::MapSlot& slot, const char* origin, Tensor* values,
                             Tensor* lengths) {
  const DType dtype = ConfigDType(config);
  const auto* fixed = std::get_if<FixedLenFeature>(&config);
  if (!slot.present) {
    if (fixed != nullptr && !fixed->allow_missing) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sequence feature '%s' is missing (no feature_list; set allow_missing to accept that)",
          name));
    }
    Shape shape = fixed != nullptr ? fixed->shape : Shape{};
    shape.InsertDim(0, 0);
    *values = Tensor(dtype, std::move(shape));
    *lengths = Tensor(DType::kInt64, Shape{0});
    return absl::OkStatus();
  }

  // FeatureList: feature = 1, one Feature per step.
  const internal::FeatureKind want = internal::FeatureKindOf(dtype);
  absl::InlinedVector<internal::FeatureView, 8> steps;
  internal::WireField field;
  for (absl::string_view list : slot.values) {
    internal::WireReader reader(list, origin);
    while (!reader.done()) {
      absl::Status s = reader.Next(&field);
      if (!s.ok()) return internal::Prefixed(absl::StrFormat("sequence feature '%s': ", name), s);
      if (field.number != 1 || field.type != internal::WireType::kLen) continue;
      const int64_t t = static_cast<int64_t>(steps.size());
      internal::FeatureView& step = steps.emplace_back();
      s = internal::MergeFeature(field.bytes, origin, &step);
      if (!s.ok()) {
        return internal::Prefixed(absl::StrFormat("sequence feature '%s' step %d: ", name, t), s);
      }
      // A step with no list has no values, whatever the type.
      if (step.kind != internal::FeatureKind::kNone && step.kind != want) {
        return absl::InvalidArgumentError(
            absl::StrFormat("sequence feature '%s' step %d: expected %s, got %s", name, t,
                            internal::FeatureKindName(want), internal::FeatureKindName(step.kind)));
      }
    }
  }

  const int64_t num_steps = static_cast<int64_t>(steps.size());
  *lengths = Tensor(DType::kInt64, Shape{num_steps});
  int64_t* counts = lengths->data<int64_t>();
  int64_t total = 0;
  for (int64_t t = 0; t < num_steps; ++t) {
    absl::StatusOr<int64_t> n = internal::CountValues(steps[t], origin);
    if (!n.ok()) {
      return internal::Prefixed(absl::StrFormat("sequence feature '%s' step %d: ", name, t),
                                n.status());
    }
    if (fixed != nullptr && *n != fixed->shape.num_elements()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("sequence feature '%s' step %d: expected %d values for shape %s, got %d",
                          name, t, fixed->shape.num_elements(), fixed->shape.DebugString(), *n));
    }
    counts[t] = *n;
    total += *n;
  }
  Shape shape{total};
  if (fixed != nullptr) {
    shape = fixed->shape;
    shape.InsertDim(0, num_steps);
  }
  *values = Tensor(dtype, std::move(shape));
  int64_t offset = 0;
  for (int64_t t = 0; t < num_steps; ++t) {
    absl::Status s = internal::DecodeValues(steps[t], origin, counts[t], values, offset);
    if (!s.ok()) {
      return internal::Prefixed(absl::StrFormat("sequence feature '%s' step %d: ", name, t), s);
    }
    offset += counts[t];
  }
  return absl::OkStatus();
}

// SequenceExample: context = 1 (Features), feature_lists = 2 (FeatureLists);
// repeated occurrences merge, so every one is walked.
absl::StatusOr<ParsedSequenceExample> ParseWith(absl::string_view serialized,
                                                const FeatureSpec& context_spec,
                                                const internal::FeatureIndex& context_index,
                                                const FeatureSpec& sequence_spec,
                                                const internal::FeatureIndex& sequence_index) {
  const char* origin = serialized.data();
  absl::InlinedVector<internal::MapSlot, 8> context_slots(context_spec.features.size());
  absl::InlinedVector<internal::MapSlot, 8> sequence_slots(sequence_spec.features.size());
  internal::WireReader reader(serialized, origin);
  internal::WireField field;
  size_t context_hint = 0;
  size_t sequence_hint = 0;
  while (!reader.done()) {
    SLUICE_RETURN_IF_ERROR(reader.Next(&field));
    if (field.type != internal::WireType::kLen) continue;
    if (field.number == 1) {
      SLUICE_RETURN_IF_ERROR(internal::CollectMapValues(
          field.bytes, origin, context_index, &context_hint, absl::MakeSpan(context_slots)));
    } else if (field.number == 2) {
      SLUICE_RETURN_IF_ERROR(internal::CollectMapValues(
          field.bytes, origin, sequence_index, &sequence_hint, absl::MakeSpan(sequence_slots)));
    }
  }

  ParsedSequenceExample out;
  absl::Status s = internal::MaterializeFeatures(context_spec, context_slots, origin, &out.context);
  if (!s.ok()) return internal::Prefixed("context ", s);
  const size_t n = sequence_spec.features.size();
  out.sequence.resize(n);
  out.sequence_lengths.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& [name, config] = sequence_spec.features[i];
    SLUICE_RETURN_IF_ERROR(SequenceTensors(name, config, sequence_slots[i], origin,
                                           &out.sequence[i], &out.sequence_lengths[i]));
  }
  return out;
}

}  // namespace

absl::StatusOr<ParsedSequenceExample> ParseSequenceExample(absl::string_view serialized,
                                                           const FeatureSpec& context_spec,
                                                           const FeatureSpec& sequence_spec) {
  constexpr absl::string_view kPrefix = "ParseSequenceExample: ";
  absl::StatusOr<internal::FeatureIndex> context_index =
      internal::IndexSpec(context_spec, /*sequence=*/false);
  if (!context_index.ok())
    return internal::Prefixed("ParseSequenceExample: context spec: ", context_index.status());
  absl::StatusOr<internal::FeatureIndex> sequence_index =
      internal::IndexSpec(sequence_spec, /*sequence=*/true);
  if (!sequence_index.ok())
    return internal::Prefixed("ParseSequenceExample: sequence spec: ", sequence_index.status());
  absl::StatusOr<ParsedSequenceExample> out =
      ParseWith(serialized, context_spec, *context_index, sequence_spec, *sequence_index);
  if (!out.ok()) return internal::Prefixed(kPrefix, out.status());
  return out;
}

struct SequenceExampleParser::Compiled {
  FeatureSpec context_spec;
  FeatureSpec sequence_spec;
  internal::FeatureIndex context_index;   // Views the names in context_spec.
  internal::FeatureIndex sequence_index;  // Views the names in sequence_spec.
};

absl::StatusOr<SequenceExampleParser> SequenceExampleParser::Create(FeatureSpec context_spec,
                                                                    FeatureSpec sequence_spec) {
  auto compiled = std::make_shared<Compiled>();
  compiled->context_spec = std::move(context_spec);
  compiled->sequence_spec = std::move(sequence_spec);
  absl::StatusOr<internal::FeatureIndex> context_index =
      internal::IndexSpec(compiled->context_spec, /*sequence=*/false);
  if (!context_index.ok())
    return internal::Prefixed("SequenceExampleParser: context spec: ", context_index.status());
  absl::StatusOr<internal::FeatureIndex> sequence_index =
      internal::IndexSpec(compiled->sequence_spec, /*sequence=*/true);
  if (!sequence_index.ok())
    return internal::Prefixed("SequenceExampleParser: sequence spec: ", sequence_index.status());
  compiled->context_index = *std::move(context_index);
  compiled->sequence_index = *std::move(sequence_index);
  return SequenceExampleParser(std::move(compiled));
}

absl::StatusOr<ParsedSequenceExample> SequenceExampleParser::Parse(
    absl::string_view serialized) const {
  const Compiled& c = *compiled_;
  absl::StatusOr<ParsedSequenceExample> out =
      ParseWith(serialized, c.context_spec, c.context_index, c.sequence_spec, c.sequence_index);
  if (!out.ok()) return internal::Prefixed("ParseSequenceExample: ", out.status());
  return out;
}

const FeatureSpec& SequenceExampleParser::context_spec() const { return compiled_->context_spec; }
const FeatureSpec& SequenceExampleParser::sequence_spec() const { return compiled_->sequence_spec; }

}  // namespace sluice
