// ParseExample against protobuf's generated parser, on two shapes of Example:
// one 60 KB image with a label and four floats (the large-payload case), and
// 100 small features (the many-keys case). Each iteration parses one Example
// into tensors; Google Benchmark's time per iteration is the time per Example.
// The protobuf baseline parses into a reused message (its best case) and then
// copies the same values into the same tensors.
//
//   build*/bench/example_parse_bench

#include <algorithm>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "core/tensor.h"
#include "io/example_builder.h"
#include "io/example_parser.h"
#include "io/proto/example.pb.h"

namespace sluice {
namespace {

struct Case {
  std::string serialized;
  FeatureSpec spec;
};

Case ImageCase() {
  std::mt19937 rng(1);
  std::string jpeg(60 * 1024, '\0');
  for (char& c : jpeg) c = static_cast<char>(rng());
  Case c;
  c.serialized = ExampleBuilder()
                     .AddBytes("image/encoded", {jpeg})
                     .AddInt64("image/class/label", {417})
                     .AddFloat("image/object/bbox", {0.1f, 0.2f, 0.7f, 0.9f})
                     .AddBytes("image/format", {"jpeg"})
                     .Serialize();
  c.spec = FeatureSpec{{
      {"image/encoded", FixedLenFeature{.dtype = DType::kBytes}},
      {"image/class/label", FixedLenFeature{.dtype = DType::kInt64}},
      {"image/object/bbox", FixedLenFeature{.dtype = DType::kFloat32, .shape = {4}}},
  }};
  return c;
}

// 100 features, cycling through an int64 scalar, a float [2] and a short
// bytes value; the spec asks for all of them.
Case SmallFeaturesCase() {
  ExampleBuilder b;
  Case c;
  for (int i = 0; i < 100; ++i) {
    const std::string name = absl::StrFormat("feature/%03d", i);
    switch (i % 3) {
      case 0:
        b.AddInt64(name, {i * 1000});
        c.spec.features.emplace_back(name, FixedLenFeature{.dtype = DType::kInt64});
        break;
      case 1:
        b.AddFloat(name, {i * 0.5f, -i * 0.25f});
        c.spec.features.emplace_back(name, FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}});
        break;
      default:
        b.AddBytes(name, {absl::StrFormat("value-%d", i)});
        c.spec.features.emplace_back(name, FixedLenFeature{.dtype = DType::kBytes});
    }
  }
  c.serialized = b.Serialize();
  return c;
}

const Case& Get(int which) {
  static const Case* image = new Case(ImageCase());
  static const Case* small = new Case(SmallFeaturesCase());
  return which == 0 ? *image : *small;
}

void SetLabels(benchmark::State& state, const Case& c) {
  state.SetLabel(absl::StrFormat("%s, %d bytes", state.range(0) == 0 ? "image" : "100 features",
                                 c.serialized.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(c.serialized.size()));
  state.SetItemsProcessed(state.iterations());
}

// The same tensors through protobuf: parse the message, then copy out each
// spec entry after checking its kind and count, as ParseExample does.
absl::StatusOr<std::vector<Tensor>> ExtractFromMessage(const proto::Example& ex,
                                                       const FeatureSpec& spec) {
  std::vector<Tensor> out;
  out.reserve(spec.features.size());
  const auto& map = ex.features().feature();
  for (const auto& [name, config] : spec.features) {
    const auto& fixed = std::get<FixedLenFeature>(config);
    auto it = map.find(name);
    if (it == map.end()) return absl::InvalidArgumentError("missing " + name);
    const proto::Feature& f = it->second;
    Tensor t(fixed.dtype, fixed.shape);
    const int64_t n = fixed.shape.num_elements();
    if (fixed.dtype == DType::kInt64 && f.has_int64_list() && f.int64_list().value_size() == n) {
      std::copy(f.int64_list().value().begin(), f.int64_list().value().end(), t.data<int64_t>());
    } else if (fixed.dtype == DType::kFloat32 && f.has_float_list() &&
               f.float_list().value_size() == n) {
      std::copy(f.float_list().value().begin(), f.float_list().value().end(), t.data<float>());
    } else if (fixed.dtype == DType::kBytes && f.has_bytes_list() &&
               f.bytes_list().value_size() == n) {
      std::copy(f.bytes_list().value().begin(), f.bytes_list().value().end(),
                t.data<std::string>());
    } else {
      return absl::InvalidArgumentError("mismatch in " + name);
    }
    out.push_back(std::move(t));
  }
  return out;
}

// Both parsers must give the same tensors, or the comparison means nothing.
bool SameAsProtobuf(const Case& c, const std::vector<Tensor>& ours) {
  proto::Example ex;
  if (!ex.ParseFromString(c.serialized)) return false;
  absl::StatusOr<std::vector<Tensor>> theirs = ExtractFromMessage(ex, c.spec);
  if (!theirs.ok() || theirs->size() != ours.size()) return false;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (!ours[i].Equals((*theirs)[i])) return false;
  }
  return true;
}

void BM_ExampleParser(benchmark::State& state) {
  const Case& c = Get(static_cast<int>(state.range(0)));
  absl::StatusOr<ExampleParser> parser = ExampleParser::Create(c.spec);
  if (!parser.ok()) return state.SkipWithError(parser.status().ToString().c_str());
  absl::StatusOr<std::vector<Tensor>> check = parser->Parse(c.serialized);
  if (!check.ok() || !SameAsProtobuf(c, *check)) {
    return state.SkipWithError("ExampleParser and protobuf disagree");
  }
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> t = parser->Parse(c.serialized);
    if (!t.ok()) return state.SkipWithError(t.status().ToString().c_str());
    benchmark::DoNotOptimize(t->data());
  }
  SetLabels(state, c);
}
BENCHMARK(BM_ExampleParser)->Arg(0)->Arg(1);

// The free function: validates and indexes the spec on every call.
void BM_ParseExample(benchmark::State& state) {
  const Case& c = Get(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> t = ParseExample(c.serialized, c.spec);
    if (!t.ok()) return state.SkipWithError(t.status().ToString().c_str());
    benchmark::DoNotOptimize(t->data());
  }
  SetLabels(state, c);
}
BENCHMARK(BM_ParseExample)->Arg(0)->Arg(1);

void BM_ProtobufParseAndExtract(benchmark::State& state) {
  const Case& c = Get(static_cast<int>(state.range(0)));
  proto::Example ex;
  for (auto _ : state) {
    if (!ex.ParseFromString(c.serialized)) return state.SkipWithError("ParseFromString failed");
    absl::StatusOr<std::vector<Tensor>> t = ExtractFromMessage(ex, c.spec);
    if (!t.ok()) return state.SkipWithError(t.status().ToString().c_str());
    benchmark::DoNotOptimize(t->data());
  }
  SetLabels(state, c);
}
BENCHMARK(BM_ProtobufParseAndExtract)->Arg(0)->Arg(1);

// Protobuf's parse alone, without building tensors: a lower bound for any
// approach that goes through the message.
void BM_ProtobufParseOnly(benchmark::State& state) {
  const Case& c = Get(static_cast<int>(state.range(0)));
  proto::Example ex;
  for (auto _ : state) {
    if (!ex.ParseFromString(c.serialized)) return state.SkipWithError("ParseFromString failed");
    benchmark::DoNotOptimize(&ex);
  }
  SetLabels(state, c);
}
BENCHMARK(BM_ProtobufParseOnly)->Arg(0)->Arg(1);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
