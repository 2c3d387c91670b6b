// libFuzzer target: ParseExample with a few fixed specs (the first byte picks one). The one-shot
// ParseExample and a compiled ExampleParser must agree, and a parsed tensor must have the spec's
// dtype and, for a FixedLen feature, its shape.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/example_parser.h"
#include "io/feature_spec.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

std::vector<FeatureSpec> Specs() {
  std::vector<FeatureSpec> specs(3);
  // The fixtures' small100 records.
  specs[0].features = {{"id", FixedLenFeature{DType::kInt64, Shape{}}},
                       {"vec", FixedLenFeature{DType::kFloat32, Shape{3}}},
                       {"name", FixedLenFeature{DType::kBytes, Shape{}}}};
  // An image record, with defaults and variable-length features.
  specs[1].features = {
      {"image/encoded", FixedLenFeature{DType::kBytes, Shape{}, Tensor::Scalar<std::string>("")}},
      {"image/class/label", FixedLenFeature{DType::kInt64, Shape{}, Tensor::Scalar<int64_t>(-1)}},
      {"image/object/bbox/xmin", VarLenFeature{DType::kFloat32}},
      {"ids", VarLenFeature{DType::kInt64}},
      {"tags", VarLenFeature{DType::kBytes}}};
  // Multi-dimensional and empty shapes.
  specs[2].features = {
      {"m", FixedLenFeature{DType::kFloat32, Shape{2, 3}, Tensor::Zeros(DType::kFloat32, {2, 3})}},
      {"e", FixedLenFeature{DType::kInt64, Shape{0}}},
      {"b", FixedLenFeature{DType::kBytes, Shape{2}}}};
  return specs;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  static const std::vector<FeatureSpec>* specs = new std::vector<FeatureSpec>(Specs());
  static const std::vector<ExampleParser>* parsers = [] {
    auto* p = new std::vector<ExampleParser>;
    for (const FeatureSpec& s : *specs) p->push_back(*ExampleParser::Create(s));
    return p;
  }();
  if (size < 1) return 0;
  const size_t which = data[0] % specs->size();
  const absl::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const FeatureSpec& spec = (*specs)[which];

  absl::StatusOr<std::vector<Tensor>> once = ParseExample(bytes, spec);
  absl::StatusOr<std::vector<Tensor>> compiled = (*parsers)[which].Parse(bytes);
  Check(once.ok() == compiled.ok());
  if (!once.ok()) {
    Check(once.status() == compiled.status());
    return 0;
  }
  Check(once->size() == spec.features.size() && compiled->size() == spec.features.size());
  for (size_t i = 0; i < spec.features.size(); ++i) {
    Check((*once)[i].Equals((*compiled)[i]));
    const FeatureConfig& config = spec.features[i].second;
    Check((*once)[i].dtype() == ConfigDType(config));
    if (const auto* fixed = std::get_if<FixedLenFeature>(&config)) {
      Check((*once)[i].shape() == fixed->shape);
    } else {
      Check((*once)[i].rank() == 1);
    }
  }
  return 0;
}
