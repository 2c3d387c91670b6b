// libFuzzer target: ParseSequenceExample with fixed context and sequence specs. The one-shot
// function and a compiled SequenceExampleParser must agree, and the outputs must be consistent:
// a FixedLen sequence entry is [T, shape...] and its lengths are T copies of the step size; a
// VarLen entry's lengths add up to its values.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/feature_spec.h"
#include "io/sequence_example_parser.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

bool SameTensors(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].Equals(b[i])) return false;
  }
  return true;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  static const FeatureSpec* context =
      new FeatureSpec{{{"length", FixedLenFeature{.dtype = DType::kInt64}},
                       {"ctx_vec", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}},
                       {"label", FixedLenFeature{.dtype = DType::kInt64,
                                                 .default_value = Tensor::Scalar<int64_t>(-1)}},
                       {"names", VarLenFeature{DType::kBytes}}}};
  static const FeatureSpec* sequence = new FeatureSpec{
      {{"tokens", FixedLenFeature{.dtype = DType::kInt64}},
       {"pairs", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}, .allow_missing = true}},
       {"words", FixedLenFeature{.dtype = DType::kBytes, .allow_missing = true}},
       {"ragged", VarLenFeature{DType::kFloat32}}}};
  static const SequenceExampleParser* parser =
      new SequenceExampleParser(*SequenceExampleParser::Create(*context, *sequence));
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<ParsedSequenceExample> once = ParseSequenceExample(bytes, *context, *sequence);
  absl::StatusOr<ParsedSequenceExample> compiled = parser->Parse(bytes);
  Check(once.ok() == compiled.ok());
  if (!once.ok()) {
    Check(once.status() == compiled.status());
    return 0;
  }
  Check(SameTensors(once->context, compiled->context) &&
        SameTensors(once->sequence, compiled->sequence) &&
        SameTensors(once->sequence_lengths, compiled->sequence_lengths));
  Check(once->context.size() == context->features.size() &&
        once->sequence.size() == sequence->features.size() &&
        once->sequence_lengths.size() == sequence->features.size());
  for (size_t i = 0; i < sequence->features.size(); ++i) {
    const Tensor& values = once->sequence[i];
    const Tensor& lengths = once->sequence_lengths[i];
    Check(lengths.dtype() == DType::kInt64 && lengths.rank() == 1);
    int64_t total = 0;
    for (int64_t n : lengths.flat<int64_t>()) total += n;
    if (const auto* fixed = std::get_if<FixedLenFeature>(&sequence->features[i].second)) {
      Check(values.rank() == 1 + fixed->shape.rank() && values.dim(0) == lengths.dim(0));
      for (int64_t n : lengths.flat<int64_t>()) Check(n == fixed->shape.num_elements());
    } else {
      Check(values.rank() == 1 && values.dim(0) == total);
    }
  }
  return 0;
}
