#include "io/sequence_example_parser.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"
#include "tests/tensor_values.h"
#include "tests/wire_encoding.h"

namespace sluice {
namespace {

using ::sluice::testing::LenField;
using ::sluice::testing::MapEntry;
using ::sluice::testing::Values;
using ::sluice::testing::Varint;
using ::sluice::testing::VarintField;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- Building SequenceExamples with the protobuf classes.

proto::Feature& Context(proto::SequenceExample* ex, const std::string& name) {
  return (*ex->mutable_context()->mutable_feature())[name];
}
proto::FeatureList& Lists(proto::SequenceExample* ex, const std::string& name) {
  return (*ex->mutable_feature_lists()->mutable_feature_list())[name];
}
void AddInt64Step(proto::SequenceExample* ex, const std::string& name, std::vector<int64_t> v) {
  proto::Int64List* list = Lists(ex, name).add_feature()->mutable_int64_list();
  for (int64_t x : v) list->add_value(x);
}
void AddFloatStep(proto::SequenceExample* ex, const std::string& name, std::vector<float> v) {
  proto::FloatList* list = Lists(ex, name).add_feature()->mutable_float_list();
  for (float x : v) list->add_value(x);
}
void AddBytesStep(proto::SequenceExample* ex, const std::string& name, std::vector<std::string> v) {
  proto::BytesList* list = Lists(ex, name).add_feature()->mutable_bytes_list();
  for (const auto& x : v) list->add_value(x);
}
std::string Serialize(const proto::SequenceExample& ex) {
  std::string s;
  EXPECT_TRUE(ex.SerializeToString(&s));
  return s;
}

// ---- Hand encoding.

// A Feature holding an unpacked int64_list.
std::string UnpackedInt64Step(std::vector<int64_t> v) {
  std::string list;
  for (int64_t x : v) list += VarintField(1, static_cast<uint64_t>(x));
  return LenField(1, LenField(3, list));  // FeatureList.feature = 1; Feature.int64_list = 3.
}

const FeatureSpec kNoContext;

TEST(ParseSequenceExampleTest, ContextAndEveryKindOfSequence) {
  proto::SequenceExample ex;
  Context(&ex, "length").mutable_int64_list()->add_value(3);
  Context(&ex, "ctx_vec").mutable_float_list()->add_value(0.5f);
  Context(&ex, "ctx_vec").mutable_float_list()->add_value(1.5f);
  Context(&ex, "shared").mutable_bytes_list()->add_value("from context");
  for (int t = 0; t < 3; ++t) {
    AddInt64Step(&ex, "tokens", {10 * t});
    AddFloatStep(&ex, "pairs", {static_cast<float>(t), -static_cast<float>(t)});
    AddBytesStep(&ex, "words", {"w" + std::to_string(t)});
  }
  AddInt64Step(&ex, "ragged", {1, 2});
  AddInt64Step(&ex, "ragged", {});
  Lists(&ex, "ragged").add_feature();  // A step holding no list: zero values.
  AddInt64Step(&ex, "ragged", {3});
  AddBytesStep(&ex, "shared", {"from lists"});

  const FeatureSpec context{{
      {"length", FixedLenFeature{.dtype = DType::kInt64}},
      {"ctx_vec", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}},
      {"shared", VarLenFeature{DType::kBytes}},
      {"label",
       FixedLenFeature{.dtype = DType::kInt64, .default_value = Tensor::Scalar<int64_t>(-1)}},
  }};
  const FeatureSpec sequence{{
      {"tokens", FixedLenFeature{.dtype = DType::kInt64}},
      {"pairs", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}},
      {"words", FixedLenFeature{.dtype = DType::kBytes}},
      {"ragged", VarLenFeature{DType::kInt64}},
      {"shared", VarLenFeature{DType::kBytes}},
  }};
  absl::StatusOr<ParsedSequenceExample> p = ParseSequenceExample(Serialize(ex), context, sequence);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->context.size(), 4u);
  EXPECT_EQ(p->context[0].scalar<int64_t>(), 3);
  EXPECT_EQ(p->context[1].shape(), Shape{2});
  EXPECT_THAT(Values<float>(p->context[1]), ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(Values<std::string>(p->context[2]), ElementsAre("from context"));
  EXPECT_EQ(p->context[3].scalar<int64_t>(), -1);

  ASSERT_EQ(p->sequence.size(), 5u);
  ASSERT_EQ(p->sequence_lengths.size(), 5u);
  EXPECT_EQ(p->sequence[0].shape(), Shape{3});
  EXPECT_THAT(Values<int64_t>(p->sequence[0]), ElementsAre(0, 10, 20));
  EXPECT_THAT(Values<int64_t>(p->sequence_lengths[0]), ElementsAre(1, 1, 1));
  EXPECT_EQ(p->sequence[1].shape(), (Shape{3, 2}));
  EXPECT_THAT(Values<float>(p->sequence[1]), ElementsAre(0, -0.0f, 1, -1, 2, -2));
  EXPECT_THAT(Values<int64_t>(p->sequence_lengths[1]), ElementsAre(2, 2, 2));
  EXPECT_EQ(p->sequence[2].shape(), Shape{3});
  EXPECT_THAT(Values<std::string>(p->sequence[2]), ElementsAre("w0", "w1", "w2"));
  EXPECT_EQ(p->sequence[3].shape(), Shape{3});
  EXPECT_THAT(Values<int64_t>(p->sequence[3]), ElementsAre(1, 2, 3));
  EXPECT_EQ(p->sequence_lengths[3].dtype(), DType::kInt64);
  EXPECT_THAT(Values<int64_t>(p->sequence_lengths[3]), ElementsAre(2, 0, 0, 1));
  EXPECT_THAT(Values<std::string>(p->sequence[4]), ElementsAre("from lists"));

  // The compiled parser gives the same.
  absl::StatusOr<SequenceExampleParser> parser = SequenceExampleParser::Create(context, sequence);
  ASSERT_TRUE(parser.ok()) << parser.status();
  absl::StatusOr<ParsedSequenceExample> q = parser->Parse(Serialize(ex));
  ASSERT_TRUE(q.ok()) << q.status();
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(q->context[i].Equals(p->context[i]));
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(q->sequence[i].Equals(p->sequence[i]));
    EXPECT_TRUE(q->sequence_lengths[i].Equals(p->sequence_lengths[i]));
  }
  EXPECT_EQ(parser->context_spec().features.size(), 4u);
  EXPECT_EQ(parser->sequence_spec().features.size(), 5u);
}

TEST(ParseSequenceExampleTest, AbsentAndEmptyFeatureLists) {
  proto::SequenceExample ex;
  Lists(&ex, "no_steps");  // Present, with zero steps.
  const FeatureSpec sequence{{
      {"no_steps", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}},
      {"absent_ok", FixedLenFeature{.dtype = DType::kBytes, .shape = {3}, .allow_missing = true}},
      {"absent_var", VarLenFeature{DType::kInt64}},
  }};
  absl::StatusOr<ParsedSequenceExample> p =
      ParseSequenceExample(Serialize(ex), kNoContext, sequence);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->sequence[0].dtype(), DType::kFloat32);
  EXPECT_EQ(p->sequence[0].shape(), (Shape{0, 2}));
  EXPECT_EQ(p->sequence_lengths[0].shape(), Shape{0});
  EXPECT_EQ(p->sequence[1].dtype(), DType::kBytes);
  EXPECT_EQ(p->sequence[1].shape(), (Shape{0, 3}));
  EXPECT_EQ(p->sequence[2].shape(), Shape{0});
  EXPECT_EQ(p->sequence_lengths[2].shape(), Shape{0});

  // Without allow_missing an absent FixedLen feature_list is an error.
  absl::StatusOr<ParsedSequenceExample> q = ParseSequenceExample(
      Serialize(ex), kNoContext, FeatureSpec{{{"x", FixedLenFeature{.dtype = DType::kInt64}}}});
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(), HasSubstr("sequence feature 'x' is missing"));
}

TEST(ParseSequenceExampleTest, ErrorsNameTheFeatureAndStep) {
  proto::SequenceExample ex;
  AddFloatStep(&ex, "pairs", {1, 2});
  AddFloatStep(&ex, "pairs", {1, 2, 3});
  AddInt64Step(&ex, "ids", {1});
  AddFloatStep(&ex, "ids", {2});
  Context(&ex, "c").mutable_float_list()->add_value(1);
  const std::string bytes = Serialize(ex);

  absl::StatusOr<ParsedSequenceExample> p = ParseSequenceExample(
      bytes, kNoContext,
      FeatureSpec{{{"pairs", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}}}});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(),
              HasSubstr("sequence feature 'pairs' step 1: expected 2 values for shape [2], got 3"));

  p = ParseSequenceExample(bytes, kNoContext, FeatureSpec{{{"ids", VarLenFeature{DType::kInt64}}}});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              HasSubstr("sequence feature 'ids' step 1: expected int64_list, got float_list"));

  p = ParseSequenceExample(bytes, FeatureSpec{{{"c", FixedLenFeature{.dtype = DType::kInt64}}}},
                           kNoContext);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              HasSubstr("context feature 'c': expected int64_list, got float_list"));

  p = ParseSequenceExample(bytes, FeatureSpec{{{"gone", FixedLenFeature{.dtype = DType::kInt64}}}},
                           kNoContext);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              HasSubstr("context feature 'gone' is missing and has no default"));
}

TEST(ParseSequenceExampleTest, InvalidSpecsAreRejected) {
  absl::StatusOr<ParsedSequenceExample> p = ParseSequenceExample(
      "", kNoContext,
      FeatureSpec{{{"s", FixedLenFeature{.dtype = DType::kInt64,
                                         .default_value = Tensor::Scalar<int64_t>(1)}}}});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(),
              HasSubstr("sequence spec: sequence feature 's': default_value"));
  p = ParseSequenceExample(
      "", FeatureSpec{{{"c", FixedLenFeature{.dtype = DType::kInt64, .allow_missing = true}}}},
      kNoContext);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("context spec: feature 'c': allow_missing"));
  EXPECT_FALSE(
      SequenceExampleParser::Create(kNoContext, FeatureSpec{{{"a", VarLenFeature{DType::kInt64}},
                                                             {"a", VarLenFeature{DType::kInt64}}}})
          .ok());
}

TEST(ParseSequenceExampleTest, UnpackedStepsRepeatedEntriesAndSplitValues) {
  // "a": two entries, the last wins. "b": one entry whose value field
  // (a FeatureList) occurs twice: protobuf merges them, so the steps concatenate.
  const std::string lists =
      MapEntry("a", UnpackedInt64Step({9, 9, 9})) + MapEntry("a", UnpackedInt64Step({1, 2})) +
      LenField(1, LenField(2, UnpackedInt64Step({5})) + LenField(1, "b") +
                      LenField(2, UnpackedInt64Step({6, 7}) + UnpackedInt64Step({-8})));
  const std::string bytes = LenField(2, lists);
  proto::SequenceExample ex;
  ASSERT_TRUE(ex.ParseFromString(bytes));
  EXPECT_EQ(ex.feature_lists().feature_list().at("a").feature_size(), 1);
  EXPECT_EQ(ex.feature_lists().feature_list().at("b").feature_size(), 3);
  absl::StatusOr<ParsedSequenceExample> p = ParseSequenceExample(
      bytes, kNoContext,
      FeatureSpec{{{"a", VarLenFeature{DType::kInt64}}, {"b", VarLenFeature{DType::kInt64}}}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(Values<int64_t>(p->sequence[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<int64_t>(p->sequence_lengths[0]), ElementsAre(2));
  EXPECT_THAT(Values<int64_t>(p->sequence[1]), ElementsAre(5, 6, 7, -8));
  EXPECT_THAT(Values<int64_t>(p->sequence_lengths[1]), ElementsAre(1, 2, 1));
}

TEST(ParseSequenceExampleTest, TruncationIsDataLoss) {
  proto::SequenceExample ex;
  Context(&ex, "c").mutable_int64_list()->add_value(1);
  AddFloatStep(&ex, "s", {1, 2});
  AddFloatStep(&ex, "s", {3, 4});
  std::string context_only;
  ASSERT_TRUE(ex.context().SerializeToString(&context_only));
  const size_t boundary = LenField(1, context_only).size();  // Where the context field ends.
  const std::string bytes = Serialize(ex);
  const FeatureSpec context{{{"c", FixedLenFeature{.dtype = DType::kInt64}}}};
  const FeatureSpec sequence{{{"s", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}}}};
  ASSERT_TRUE(ParseSequenceExample(bytes, context, sequence).ok());
  for (size_t n = 1; n < bytes.size(); ++n) {
    const std::string cut = bytes.substr(0, n);
    absl::StatusOr<ParsedSequenceExample> p = ParseSequenceExample(cut, context, sequence);
    ASSERT_FALSE(p.ok()) << n;
    EXPECT_EQ(p.status().code(),
              n == boundary ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kDataLoss)
        << n << ": " << p.status();
  }
}

// ---- Differential check against protobuf's parser, under mutations.

absl::StatusOr<Tensor> ValuesOf(const proto::Feature& f, DType dtype) {
  switch (f.kind_case()) {
    case proto::Feature::KIND_NOT_SET:
      return Tensor(dtype, Shape{0});
    case proto::Feature::kInt64List:
      if (dtype != DType::kInt64) break;
      return Tensor::FromVector(
          std::vector<int64_t>(f.int64_list().value().begin(), f.int64_list().value().end()));
    case proto::Feature::kFloatList:
      if (dtype != DType::kFloat32) break;
      return Tensor::FromVector(
          std::vector<float>(f.float_list().value().begin(), f.float_list().value().end()));
    case proto::Feature::kBytesList:
      if (dtype != DType::kBytes) break;
      return Tensor::FromVector(
          std::vector<std::string>(f.bytes_list().value().begin(), f.bytes_list().value().end()));
  }
  return absl::InvalidArgumentError("wrong type");
}

// The expected sequence tensors for a spec of VarLen int64 "v" and FixedLen
// float [2] "f", and VarLen bytes context "c".
struct Expected {
  std::vector<Tensor> tensors;  // c, v, v lengths, f, f lengths
};
absl::StatusOr<Expected> Reference(const proto::SequenceExample& ex) {
  Expected e;
  auto c = ex.context().feature().find("c");
  if (c == ex.context().feature().end()) {
    e.tensors.emplace_back(DType::kBytes, Shape{0});
  } else {
    absl::StatusOr<Tensor> t = ValuesOf(c->second, DType::kBytes);
    if (!t.ok()) return t.status();
    e.tensors.push_back(*t);
  }
  const auto& lists = ex.feature_lists().feature_list();
  std::vector<int64_t> v, v_len;
  if (auto it = lists.find("v"); it != lists.end()) {
    for (const proto::Feature& step : it->second.feature()) {
      absl::StatusOr<Tensor> t = ValuesOf(step, DType::kInt64);
      if (!t.ok()) return t.status();
      for (int64_t x : t->flat<int64_t>()) v.push_back(x);
      v_len.push_back(t->num_elements());
    }
  }
  e.tensors.push_back(Tensor::FromVector(v));
  e.tensors.push_back(Tensor::FromVector(v_len));
  auto it = lists.find("f");
  if (it == lists.end()) return absl::InvalidArgumentError("missing");
  std::vector<float> f;
  std::vector<int64_t> f_len;
  for (const proto::Feature& step : it->second.feature()) {
    absl::StatusOr<Tensor> t = ValuesOf(step, DType::kFloat32);
    if (!t.ok()) return t.status();
    if (t->num_elements() != 2) return absl::InvalidArgumentError("count");
    for (float x : t->flat<float>()) f.push_back(x);
    f_len.push_back(2);
  }
  const int64_t steps = static_cast<int64_t>(f_len.size());
  e.tensors.push_back(*Tensor::FromVector(f, Shape{steps, 2}));
  e.tensors.push_back(Tensor::FromVector(f_len));
  return e;
}

TEST(ParseSequenceExampleFuzzTest, MutationsAgreeWithProtobufAndNeverCrash) {
  google::protobuf::LogSilencer quiet;  // Protobuf logs every invalid UTF-8 key it rejects.
  proto::SequenceExample seed_ex;
  Context(&seed_ex, "c").mutable_bytes_list()->add_value("ctx");
  Context(&seed_ex, "other").mutable_int64_list()->add_value(5);
  AddInt64Step(&seed_ex, "v", {1, 300});
  AddInt64Step(&seed_ex, "v", {});
  AddInt64Step(&seed_ex, "v", {-4});
  AddFloatStep(&seed_ex, "f", {1, 2});
  AddFloatStep(&seed_ex, "f", {3, 4});
  const std::string seed =
      Serialize(seed_ex) + LenField(2, MapEntry("v", UnpackedInt64Step({7, 8})));
  const FeatureSpec context{{{"c", VarLenFeature{DType::kBytes}}}};
  const FeatureSpec sequence{{{"v", VarLenFeature{DType::kInt64}},
                              {"f", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}}}};
  absl::StatusOr<SequenceExampleParser> parser = SequenceExampleParser::Create(context, sequence);
  ASSERT_TRUE(parser.ok());
  std::mt19937 rng(4321);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int agreed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = seed;
    if (iter > 0) {
      for (int e = 0, edits = 1 + static_cast<int>(pick(3)); e < edits && !s.empty(); ++e) {
        switch (pick(3)) {
          case 0:
            s[pick(s.size())] = static_cast<char>(pick(256));
            break;
          case 1:
            s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                     static_cast<char>(pick(256)));
            break;
          default:
            s.erase(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size())));
        }
      }
    }
    absl::StatusOr<ParsedSequenceExample> got = parser->Parse(s);
    if (!got.ok()) {
      ASSERT_TRUE(got.status().code() == absl::StatusCode::kDataLoss ||
                  got.status().code() == absl::StatusCode::kInvalidArgument)
          << got.status();
    }
    proto::SequenceExample ex;
    if (!ex.ParseFromString(s)) continue;
    absl::StatusOr<Expected> want = Reference(ex);
    ASSERT_EQ(got.ok(), want.ok())
        << iter << " ours: " << got.status() << " protobuf: " << want.status();
    ++agreed;
    if (!want.ok()) continue;
    const Tensor* ours[] = {&got->context[0], &got->sequence[0], &got->sequence_lengths[0],
                            &got->sequence[1], &got->sequence_lengths[1]};
    for (int k = 0; k < 5; ++k) {
      ASSERT_TRUE(ours[k]->Equals(want->tensors[k]))
          << iter << " tensor " << k << ": " << ours[k]->DebugString() << " vs "
          << want->tensors[k].DebugString();
    }
  }
  EXPECT_GT(agreed, 500);
}

}  // namespace
}  // namespace sluice
