#include "io/example_parser.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "io/example_builder.h"
#include "io/proto/example.pb.h"
#include "tests/tensor_values.h"
#include "tests/wire_encoding.h"

namespace sluice {
namespace {

using ::sluice::testing::Fixed32Field;
using ::sluice::testing::LenField;
using ::sluice::testing::MapEntry;
using ::sluice::testing::Tag;
using ::sluice::testing::Values;
using ::sluice::testing::Varint;
using ::sluice::testing::VarintField;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- Hand encoding of the wire format, independent of the code under test.

std::string PackedFloats(const std::vector<float>& v) {
  std::string s;
  for (float f : v) s += Fixed32Field(1, f).substr(1);  // Drop the one-byte tag.
  return s;
}
std::string ExampleOf(const std::string& entries) { return LenField(1, entries); }
// Feature oneof: bytes_list = 1, float_list = 2, int64_list = 3.
std::string Int64Feature(const std::string& list) { return LenField(3, list); }
std::string FloatFeature(const std::string& list) { return LenField(2, list); }
std::string BytesFeature(const std::string& list) { return LenField(1, list); }
// Unknown fields of every wire type (field numbers 15 and up are unused).
std::string UnknownFields() {
  return VarintField(15, 300) + Tag(16, 1) + std::string(8, '\x7f') + LenField(17, "junk") +
         Fixed32Field(18, 1.5f) + Tag(19, 3) + VarintField(1, 5) + LenField(2, "in group") +
         Tag(20, 3) + Tag(20, 4) + Tag(19, 4);
}

// ---- Helpers.

std::string Serialize(const proto::Example& example) {
  std::string s;
  EXPECT_TRUE(example.SerializeToString(&s));
  return s;
}

proto::Feature& FeatureOf(proto::Example* example, const std::string& name) {
  return (*example->mutable_features()->mutable_feature())[name];
}

FeatureSpec AllTypesSpec() {
  return FeatureSpec{{
      {"i_scalar", FixedLenFeature{.dtype = DType::kInt64}},
      {"i_vec", FixedLenFeature{.dtype = DType::kInt64, .shape = {3}}},
      {"i_mat", FixedLenFeature{.dtype = DType::kInt64, .shape = {2, 2}}},
      {"f_scalar", FixedLenFeature{.dtype = DType::kFloat32}},
      {"f_vec", FixedLenFeature{.dtype = DType::kFloat32, .shape = {3}}},
      {"f_mat", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2, 2}}},
      {"b_scalar", FixedLenFeature{.dtype = DType::kBytes}},
      {"b_vec", FixedLenFeature{.dtype = DType::kBytes, .shape = {3}}},
      {"b_mat", FixedLenFeature{.dtype = DType::kBytes, .shape = {2, 2}}},
      {"i_var", VarLenFeature{DType::kInt64}},
      {"f_var", VarLenFeature{DType::kFloat32}},
      {"b_var", VarLenFeature{DType::kBytes}},
  }};
}

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

void ExpectAllTypes(const std::vector<Tensor>& t) {
  ASSERT_EQ(t.size(), 12u);
  EXPECT_EQ(t[0].dtype(), DType::kInt64);
  EXPECT_EQ(t[0].shape(), Shape{});
  EXPECT_EQ(t[0].scalar<int64_t>(), -7);
  EXPECT_EQ(t[1].shape(), Shape{3});
  EXPECT_THAT(Values<int64_t>(t[1]), ElementsAre(kMin, 0, kMax));
  EXPECT_EQ(t[2].shape(), (Shape{2, 2}));
  EXPECT_THAT(Values<int64_t>(t[2]), ElementsAre(1, 2, 300, -40000));
  EXPECT_EQ(t[3].dtype(), DType::kFloat32);
  EXPECT_EQ(t[3].shape(), Shape{});
  EXPECT_EQ(t[3].scalar<float>(), 2.5f);
  EXPECT_EQ(t[4].shape(), Shape{3});
  EXPECT_THAT(Values<float>(t[4]), ElementsAre(-1.0f, 0.125f, 1e30f));
  EXPECT_EQ(t[5].shape(), (Shape{2, 2}));
  EXPECT_THAT(Values<float>(t[5]), ElementsAre(1.0f, 2.0f, 3.0f, 4.0f));
  EXPECT_EQ(t[6].dtype(), DType::kBytes);
  EXPECT_EQ(t[6].shape(), Shape{});
  EXPECT_EQ(t[6].scalar<std::string>(), std::string("a\0b", 3));
  EXPECT_EQ(t[7].shape(), Shape{3});
  EXPECT_THAT(Values<std::string>(t[7]), ElementsAre("x", "", "zz"));
  EXPECT_EQ(t[8].shape(), (Shape{2, 2}));
  EXPECT_THAT(Values<std::string>(t[8]), ElementsAre("p", "q", "r", "s"));
  EXPECT_EQ(t[9].shape(), Shape{5});
  EXPECT_THAT(Values<int64_t>(t[9]), ElementsAre(5, 4, 3, 2, 1));
  EXPECT_EQ(t[10].shape(), Shape{1});
  EXPECT_THAT(Values<float>(t[10]), ElementsAre(-0.5f));
  EXPECT_EQ(t[11].shape(), Shape{2});
  EXPECT_THAT(Values<std::string>(t[11]), ElementsAre("hello", std::string(300, 'w')));
}

TEST(ParseExampleTest, EveryTypeAndShapeFromExampleBuilder) {
  ExampleBuilder b;
  b.AddInt64("i_scalar", {-7})
      .AddInt64("i_vec", {kMin, 0, kMax})
      .AddInt64("i_mat", {1, 2, 300, -40000})
      .AddFloat("f_scalar", {2.5f})
      .AddFloat("f_vec", {-1.0f, 0.125f, 1e30f})
      .AddFloat("f_mat", {1, 2, 3, 4})
      .AddBytes("b_scalar", {std::string("a\0b", 3)})
      .AddBytes("b_vec", {"x", "", "zz"})
      .AddBytes("b_mat", {"p", "q", "r", "s"})
      .AddInt64("i_var", {5, 4, 3, 2, 1})
      .AddFloat("f_var", {-0.5f})
      .AddBytes("b_var", {"hello", std::string(300, 'w')})
      .AddInt64("not_in_spec", {1, 2, 3});
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(b.Serialize(), AllTypesSpec());
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectAllTypes(*t);
}

TEST(ParseExampleTest, EveryTypeAndShapeFromProtobufClasses) {
  proto::Example ex;
  auto set_int64 = [&](const std::string& name, std::vector<int64_t> v) {
    for (int64_t x : v) FeatureOf(&ex, name).mutable_int64_list()->add_value(x);
  };
  auto set_float = [&](const std::string& name, std::vector<float> v) {
    for (float x : v) FeatureOf(&ex, name).mutable_float_list()->add_value(x);
  };
  auto set_bytes = [&](const std::string& name, std::vector<std::string> v) {
    for (const auto& x : v) FeatureOf(&ex, name).mutable_bytes_list()->add_value(x);
  };
  set_int64("i_scalar", {-7});
  set_int64("i_vec", {kMin, 0, kMax});
  set_int64("i_mat", {1, 2, 300, -40000});
  set_float("f_scalar", {2.5f});
  set_float("f_vec", {-1.0f, 0.125f, 1e30f});
  set_float("f_mat", {1, 2, 3, 4});
  set_bytes("b_scalar", {std::string("a\0b", 3)});
  set_bytes("b_vec", {"x", "", "zz"});
  set_bytes("b_mat", {"p", "q", "r", "s"});
  set_int64("i_var", {5, 4, 3, 2, 1});
  set_float("f_var", {-0.5f});
  set_bytes("b_var", {"hello", std::string(300, 'w')});
  set_float("not_in_spec", {9, 9});
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(Serialize(ex), AllTypesSpec());
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectAllTypes(*t);
}

TEST(ParseExampleTest, CompiledParserGivesTheSameTensors) {
  ExampleBuilder b;
  b.AddInt64("i_scalar", {-7})
      .AddInt64("i_vec", {kMin, 0, kMax})
      .AddInt64("i_mat", {1, 2, 300, -40000})
      .AddFloat("f_scalar", {2.5f})
      .AddFloat("f_vec", {-1.0f, 0.125f, 1e30f})
      .AddFloat("f_mat", {1, 2, 3, 4})
      .AddBytes("b_scalar", {std::string("a\0b", 3)})
      .AddBytes("b_vec", {"x", "", "zz"})
      .AddBytes("b_mat", {"p", "q", "r", "s"})
      .AddInt64("i_var", {5, 4, 3, 2, 1})
      .AddFloat("f_var", {-0.5f})
      .AddBytes("b_var", {"hello", std::string(300, 'w')});
  const std::string bytes = b.Serialize();
  absl::StatusOr<ExampleParser> parser = ExampleParser::Create(AllTypesSpec());
  ASSERT_TRUE(parser.ok()) << parser.status();
  EXPECT_EQ(parser->spec().features.size(), 12u);
  // Copies share the compiled spec; parsing from several threads at once.
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k, copy = *parser] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<std::vector<Tensor>> t = copy.Parse(bytes);
        if (t.ok() && t->size() == 12 &&
            Values<int64_t>((*t)[9]) == std::vector<int64_t>{5, 4, 3, 2, 1}) {
          ++ok[k];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_THAT(ok, ElementsAre(200, 200, 200, 200));
  absl::StatusOr<std::vector<Tensor>> t = parser->Parse(bytes);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectAllTypes(*t);
}

TEST(ParseExampleTest, DefaultsFillAbsentFeatures) {
  FeatureSpec spec{{
      {"label",
       FixedLenFeature{.dtype = DType::kInt64, .default_value = Tensor::Scalar<int64_t>(-1)}},
      {"box",
       FixedLenFeature{.dtype = DType::kFloat32,
                       .shape = {2, 2},
                       .default_value = *Tensor::FromVector<float>({0, 0, 1, 1}, Shape{2, 2})}},
      {"format", FixedLenFeature{.dtype = DType::kBytes,
                                 .default_value = Tensor::Scalar<std::string>("png")}},
      {"present",
       FixedLenFeature{.dtype = DType::kInt64, .default_value = Tensor::Scalar<int64_t>(99)}},
      {"tags", VarLenFeature{DType::kBytes}},
  }};
  const std::string bytes = ExampleBuilder().AddInt64("present", {3}).Serialize();
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(bytes, spec);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 5u);
  EXPECT_EQ((*t)[0].scalar<int64_t>(), -1);
  EXPECT_EQ((*t)[1].shape(), (Shape{2, 2}));
  EXPECT_THAT(Values<float>((*t)[1]), ElementsAre(0, 0, 1, 1));
  EXPECT_EQ((*t)[2].scalar<std::string>(), "png");
  EXPECT_EQ((*t)[3].scalar<int64_t>(), 3);  // Present: the default is not used.
  EXPECT_EQ((*t)[4].dtype(), DType::kBytes);
  EXPECT_EQ((*t)[4].shape(), Shape{0});
  // The result is a copy: writing into it leaves the spec's default alone.
  EXPECT_FALSE(
      (*t)[1].SharesBufferWith(*std::get<FixedLenFeature>(spec.features[1].second).default_value));
  (*t)[1].data<float>()[0] = 42;
  absl::StatusOr<std::vector<Tensor>> again = ParseExample(bytes, spec);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(Values<float>((*again)[1]), ElementsAre(0, 0, 1, 1));
}

TEST(ParseExampleTest, EmptyInputIsAnExampleWithNoFeatures) {
  FeatureSpec spec{{{"v", VarLenFeature{DType::kFloat32}},
                    {"d", FixedLenFeature{.dtype = DType::kInt64,
                                          .default_value = Tensor::Scalar<int64_t>(5)}}}};
  absl::StatusOr<std::vector<Tensor>> t = ParseExample("", spec);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].shape(), Shape{0});
  EXPECT_EQ((*t)[1].scalar<int64_t>(), 5);
}

TEST(ParseExampleTest, VarLenWithAnEmptyListIsEmpty) {
  proto::Example ex;
  FeatureOf(&ex, "v").mutable_int64_list();  // Set, with no values.
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(Serialize(ex), FeatureSpec{{{"v", VarLenFeature{DType::kInt64}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].dtype(), DType::kInt64);
  EXPECT_EQ((*t)[0].shape(), Shape{0});
}

TEST(ParseExampleTest, WrongTypeNamesTheFeature) {
  const std::string bytes = ExampleBuilder().AddFloat("image/class/label", {1.0f}).Serialize();
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(
      bytes, FeatureSpec{{{"image/class/label", FixedLenFeature{.dtype = DType::kInt64}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(),
              HasSubstr("feature 'image/class/label': expected int64_list, got float_list"));
  // VarLen checks the type too.
  t = ParseExample(bytes, FeatureSpec{{{"image/class/label", VarLenFeature{DType::kBytes}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              HasSubstr("feature 'image/class/label': expected bytes_list, got float_list"));
}

TEST(ParseExampleTest, WrongCountNamesTheFeatureAndShape) {
  const std::string bytes = ExampleBuilder().AddFloat("vec", {1, 2}).Serialize();
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(
      bytes, FeatureSpec{{{"vec", FixedLenFeature{.dtype = DType::kFloat32, .shape = {3}}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(),
              HasSubstr("feature 'vec': expected 3 values for shape [3], got 2"));
  t = ParseExample(bytes,
                   FeatureSpec{{{"vec", FixedLenFeature{.dtype = DType::kFloat32, .shape = {}}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(),
              HasSubstr("feature 'vec': expected 1 values for shape [], got 2"));
}

TEST(ParseExampleTest, MissingWithoutDefaultNamesTheFeature) {
  const std::string bytes = ExampleBuilder().AddFloat("y", {1}).Serialize();
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"y", FixedLenFeature{.dtype = DType::kFloat32}},
                                       {"x", FixedLenFeature{.dtype = DType::kInt64}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("feature 'x' is missing and has no default"));
}

TEST(ParseExampleTest, AFeatureHoldingNoListCountsAsAbsent) {
  proto::Example ex;
  FeatureOf(&ex, "x");  // A Feature with its oneof unset.
  const std::string bytes = Serialize(ex);
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"x", FixedLenFeature{.dtype = DType::kInt64}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("feature 'x' is missing"));
  t = ParseExample(
      bytes, FeatureSpec{{{"x", FixedLenFeature{.dtype = DType::kInt64,
                                                .default_value = Tensor::Scalar<int64_t>(8)}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].scalar<int64_t>(), 8);
}

TEST(ParseExampleTest, InvalidSpecIsRejected) {
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(
      "", FeatureSpec{{{"x", FixedLenFeature{.dtype = DType::kInt64,
                                             .shape = {3},
                                             .default_value = Tensor::Scalar<int64_t>(1)}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(t.status().message(), HasSubstr("feature 'x': default value is int64[]"));
  EXPECT_FALSE(ExampleParser::Create(FeatureSpec{{{"x", VarLenFeature{DType::kUint8}}}}).ok());
}

// Writers that do not pack (proto2, other languages) put one field per value.
TEST(ParseExampleTest, UnpackedInt64AndFloatLists) {
  const std::string ints = VarintField(1, 1) + VarintField(1, 150) +
                           VarintField(1, static_cast<uint64_t>(int64_t{-1})) +
                           VarintField(1, static_cast<uint64_t>(kMin));
  const std::string floats = Fixed32Field(1, 1.5f) + Fixed32Field(1, -2.25f);
  const std::string bytes =
      ExampleOf(MapEntry("ints", Int64Feature(ints)) + MapEntry("floats", FloatFeature(floats)));
  // Sanity: protobuf itself reads this encoding as the values we expect.
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(bytes));
  ASSERT_EQ(ex.features().feature().at("ints").int64_list().value_size(), 4);

  absl::StatusOr<std::vector<Tensor>> t = ParseExample(
      bytes, FeatureSpec{{{"ints", VarLenFeature{DType::kInt64}},
                          {"floats", FixedLenFeature{.dtype = DType::kFloat32, .shape = {2}}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Values<int64_t>((*t)[0]), ElementsAre(1, 150, -1, kMin));
  EXPECT_THAT(Values<float>((*t)[1]), ElementsAre(1.5f, -2.25f));
}

TEST(ParseExampleTest, PackedAndUnpackedOccurrencesConcatenate) {
  const std::string ints = VarintField(1, 5) + LenField(1, Varint(6) + Varint(7)) +
                           VarintField(1, 8) + LenField(1, "") + LenField(1, Varint(300));
  const std::string floats =
      LenField(1, PackedFloats({1, 2})) + Fixed32Field(1, 3) + LenField(1, PackedFloats({4}));
  const std::string bytes =
      ExampleOf(MapEntry("ints", Int64Feature(ints)) + MapEntry("floats", FloatFeature(floats)));
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"ints", VarLenFeature{DType::kInt64}},
                                       {"floats", VarLenFeature{DType::kFloat32}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Values<int64_t>((*t)[0]), ElementsAre(5, 6, 7, 8, 300));
  EXPECT_THAT(Values<float>((*t)[1]), ElementsAre(1, 2, 3, 4));
}

TEST(ParseExampleTest, UnknownFieldsAreSkippedAtEveryLevel) {
  const std::string u = UnknownFields();
  const std::string ints = u + LenField(1, Varint(1) + Varint(2)) + u;
  const std::string strs = u + LenField(1, "a") + u + LenField(1, "b");
  const std::string entry_a =
      LenField(1, u + LenField(1, "a") + u + LenField(2, u + Int64Feature(ints) + u));
  const std::string entry_b = LenField(1, LenField(2, BytesFeature(strs)) + u + LenField(1, "b"));
  const std::string bytes = u + LenField(1, u + entry_a + u + entry_b) + u;
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(bytes));  // Protobuf accepts it too.
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(
      bytes,
      FeatureSpec{{{"a", VarLenFeature{DType::kInt64}}, {"b", VarLenFeature{DType::kBytes}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Values<int64_t>((*t)[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<std::string>((*t)[1]), ElementsAre("a", "b"));
}

TEST(ParseExampleTest, KeyMayFollowValueInAnEntry) {
  const std::string entry =
      LenField(1, LenField(2, Int64Feature(LenField(1, Varint(42)))) + LenField(1, "late_key"));
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(
      ExampleOf(entry), FeatureSpec{{{"late_key", FixedLenFeature{.dtype = DType::kInt64}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].scalar<int64_t>(), 42);
}

TEST(ParseExampleTest, RepeatedMapEntriesLastOneWins) {
  const std::string bytes =
      ExampleOf(MapEntry("x", Int64Feature(LenField(1, Varint(1) + Varint(2)))) +
                MapEntry("y", Int64Feature(LenField(1, Varint(9)))) +
                MapEntry("x", FloatFeature(LenField(1, PackedFloats({7.5f})))));
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(bytes));
  ASSERT_EQ(ex.features().feature().at("x").float_list().value_size(), 1);  // Protobuf agrees.
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"x", VarLenFeature{DType::kFloat32}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Values<float>((*t)[0]), ElementsAre(7.5f));
}

TEST(ParseExampleTest, RepeatedFeaturesFieldsMerge) {
  const std::string bytes = ExampleOf(MapEntry("a", Int64Feature(LenField(1, Varint(1))))) +
                            ExampleOf(MapEntry("b", Int64Feature(LenField(1, Varint(2)))));
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"a", FixedLenFeature{.dtype = DType::kInt64}},
                                       {"b", FixedLenFeature{.dtype = DType::kInt64}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].scalar<int64_t>(), 1);
  EXPECT_EQ((*t)[1].scalar<int64_t>(), 2);
}

// Inside one Feature (or one map entry with its value field repeated),
// protobuf merges lists of one kind and lets a list of another kind replace
// them (oneof).
TEST(ParseExampleTest, FeatureListsMergeOrReplaceAsProtobufDoes) {
  const std::string merged_in_feature =
      Int64Feature(LenField(1, Varint(1))) + Int64Feature(LenField(1, Varint(2)));
  const std::string replaced = Int64Feature(LenField(1, Varint(1))) +
                               BytesFeature(LenField(1, "s")) +
                               Int64Feature(LenField(1, Varint(3)));
  const std::string split_value =
      LenField(1, LenField(1, "c") + LenField(2, BytesFeature(LenField(1, "u"))) +
                      LenField(2, BytesFeature(LenField(1, "v"))));
  const std::string bytes =
      ExampleOf(MapEntry("a", merged_in_feature) + MapEntry("b", replaced) + split_value);
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(bytes));
  EXPECT_EQ(ex.features().feature().at("a").int64_list().value_size(), 2);
  EXPECT_EQ(ex.features().feature().at("b").int64_list().value_size(), 1);
  EXPECT_EQ(ex.features().feature().at("c").bytes_list().value_size(), 2);
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"a", VarLenFeature{DType::kInt64}},
                                       {"b", VarLenFeature{DType::kInt64}},
                                       {"c", VarLenFeature{DType::kBytes}}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(Values<int64_t>((*t)[0]), ElementsAre(1, 2));
  EXPECT_THAT(Values<int64_t>((*t)[1]), ElementsAre(3));
  EXPECT_THAT(Values<std::string>((*t)[2]), ElementsAre("u", "v"));
}

// Over eight features the lookup uses a hash map; the entries here arrive in
// reverse order, so the sorted-order hint misses every time.
TEST(ParseExampleTest, LargeSpecInAnyOrder) {
  std::string entries;
  for (int i = 39; i >= 0; --i) {
    entries += MapEntry(absl::StrCat("f", i), Int64Feature(LenField(1, Varint(i * 10))));
  }
  FeatureSpec spec;
  for (int i = 0; i < 40; i += 2) {  // Every other feature, in the other order.
    spec.features.emplace_back(absl::StrCat("f", i), FixedLenFeature{.dtype = DType::kInt64});
  }
  spec.features.emplace_back("absent", VarLenFeature{DType::kFloat32});
  absl::StatusOr<std::vector<Tensor>> t = ParseExample(ExampleOf(entries), spec);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 21u);
  for (int k = 0; k < 20; ++k) EXPECT_EQ((*t)[k].scalar<int64_t>(), 2 * k * 10) << k;
  EXPECT_EQ((*t)[20].shape(), Shape{0});
}

TEST(ParseExampleTest, MalformedListsAreDataLossNamingTheFeature) {
  FeatureSpec spec{{{"x", VarLenFeature{DType::kInt64}}}};
  // A packed list that ends inside a varint.
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(ExampleOf(MapEntry("x", Int64Feature(LenField(1, "\x01\x80")))), spec);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr("feature 'x'"));
  // An eleven-byte varint.
  t = ParseExample(
      ExampleOf(MapEntry("x", Int64Feature(LenField(1, std::string(10, '\x80') + "\x01")))), spec);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  // A packed float list whose length is not a multiple of 4.
  t = ParseExample(ExampleOf(MapEntry("x", FloatFeature(LenField(1, "abcde")))),
                   FeatureSpec{{{"x", VarLenFeature{DType::kFloat32}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr("feature 'x'"));
}

TEST(ParseExampleTest, EveryTruncationIsDataLoss) {
  const std::string bytes = ExampleBuilder()
                                .AddInt64("id", {1, 1000000})
                                .AddFloat("vec", {1, 2, 3})
                                .AddBytes("name", {"abc", "defg"})
                                .Serialize();
  const FeatureSpec spec{{{"id", VarLenFeature{DType::kInt64}},
                          {"vec", VarLenFeature{DType::kFloat32}},
                          {"name", VarLenFeature{DType::kBytes}}}};
  ASSERT_TRUE(ParseExample(bytes, spec).ok());
  for (size_t n = 1; n < bytes.size(); ++n) {
    // A copy of exactly n bytes, so that ASan sees any read past it.
    const std::string cut = bytes.substr(0, n);
    absl::StatusOr<std::vector<Tensor>> t = ParseExample(cut, spec);
    ASSERT_FALSE(t.ok()) << n;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss) << n << ": " << t.status();
  }
}

TEST(ParseExampleTest, WireErrorsNameTheByteOffset) {
  // Field 1 declares 100 bytes where 3 remain, after 5 bytes of an unknown field.
  const std::string bytes = VarintField(15, 1) + VarintField(15, 2) + VarintField(15, 3) +
                            Tag(1, 2) + Varint(100) + "abc";
  absl::StatusOr<std::vector<Tensor>> t =
      ParseExample(bytes, FeatureSpec{{{"x", VarLenFeature{DType::kInt64}}}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(t.status().message(),
              HasSubstr("at byte 6: length-delimited field 1 declares 100 bytes, only 3 remain"));
}

// ---- Differential checks against protobuf's own parser.

// What ParseExample should give, computed from a parsed protobuf message.
absl::StatusOr<std::vector<Tensor>> Reference(const proto::Example& ex, const FeatureSpec& spec) {
  std::vector<Tensor> out;
  for (const auto& [name, config] : spec.features) {
    const DType dtype = ConfigDType(config);
    const auto* fixed = std::get_if<FixedLenFeature>(&config);
    auto it = ex.features().feature().find(name);
    if (it == ex.features().feature().end() ||
        it->second.kind_case() == proto::Feature::KIND_NOT_SET) {
      if (fixed == nullptr) {
        out.emplace_back(dtype, Shape{0});
      } else if (fixed->default_value) {
        out.push_back(*fixed->default_value);
      } else {
        return absl::InvalidArgumentError("missing");
      }
      continue;
    }
    const proto::Feature& f = it->second;
    Tensor t;
    if (dtype == DType::kInt64 && f.has_int64_list()) {
      t = Tensor::FromVector(
          std::vector<int64_t>(f.int64_list().value().begin(), f.int64_list().value().end()));
    } else if (dtype == DType::kFloat32 && f.has_float_list()) {
      t = Tensor::FromVector(
          std::vector<float>(f.float_list().value().begin(), f.float_list().value().end()));
    } else if (dtype == DType::kBytes && f.has_bytes_list()) {
      t = Tensor::FromVector(
          std::vector<std::string>(f.bytes_list().value().begin(), f.bytes_list().value().end()));
    } else {
      return absl::InvalidArgumentError("wrong type");
    }
    if (fixed != nullptr) {
      absl::StatusOr<Tensor> r = t.Reshape(fixed->shape);
      if (!r.ok()) return absl::InvalidArgumentError("wrong count");
      t = *r;
    }
    out.push_back(t);
  }
  return out;
}

// Whenever protobuf accepts the bytes, ParseExample must agree with it: the
// same values, or an InvalidArgument error where the values do not fit the
// spec. Where protobuf rejects them, ParseExample may still accept (it does
// not look inside features outside the spec), but must not crash.
void CheckAgainstProtobuf(const std::string& bytes, const FeatureSpec& spec, int* agreed) {
  absl::StatusOr<std::vector<Tensor>> got = ParseExample(bytes, spec);
  if (!got.ok()) {
    ASSERT_TRUE(got.status().code() == absl::StatusCode::kDataLoss ||
                got.status().code() == absl::StatusCode::kInvalidArgument)
        << got.status();
  }
  proto::Example ex;
  if (!ex.ParseFromString(bytes)) return;
  absl::StatusOr<std::vector<Tensor>> want = Reference(ex, spec);
  ASSERT_EQ(got.ok(), want.ok()) << "ours: " << got.status() << " protobuf: " << want.status();
  if (!want.ok()) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    ++*agreed;
    return;
  }
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    ASSERT_TRUE((*got)[i].Equals((*want)[i]))
        << spec.features[i].first << ": " << (*got)[i].DebugString() << " vs "
        << (*want)[i].DebugString();
  }
  ++*agreed;
}

FeatureSpec FuzzSpec() {
  return FeatureSpec{{
      {"a", FixedLenFeature{.dtype = DType::kInt64, .shape = {2}}},
      {"b", VarLenFeature{DType::kFloat32}},
      {"c", FixedLenFeature{.dtype = DType::kBytes,
                            .default_value = Tensor::Scalar<std::string>("dflt")}},
      {"d", VarLenFeature{DType::kInt64}},
  }};
}

std::string FuzzSeed() {
  const std::string u = UnknownFields();
  return ExampleOf(
      MapEntry("a", Int64Feature(VarintField(1, 3) + LenField(1, Varint(1u << 20)))) +
      MapEntry("b", FloatFeature(LenField(1, PackedFloats({1, 2})) + Fixed32Field(1, 3))) + u +
      MapEntry("c", BytesFeature(LenField(1, "str"))) +
      MapEntry("d", Int64Feature(LenField(1, Varint(7)) + VarintField(1, 8))) +
      MapEntry("zz", BytesFeature(LenField(1, "not in spec"))));
}

TEST(ParseExampleFuzzTest, MutationsAgreeWithProtobufAndNeverCrash) {
  google::protobuf::LogSilencer quiet;  // Protobuf logs every invalid UTF-8 key it rejects.
  const FeatureSpec spec = FuzzSpec();
  const std::string seed = FuzzSeed();
  int agreed = 0;
  CheckAgainstProtobuf(seed, spec, &agreed);
  ASSERT_EQ(agreed, 1);
  std::mt19937 rng(1234);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  for (int iter = 0; iter < 20000; ++iter) {
    std::string s = seed;
    const int edits = 1 + static_cast<int>(pick(3));
    for (int e = 0; e < edits && !s.empty(); ++e) {
      switch (pick(4)) {
        case 0:  // Replace a byte.
          s[pick(s.size())] = static_cast<char>(pick(256));
          break;
        case 1:  // Flip a bit.
          s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
          break;
        case 2:  // Insert a byte.
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                   static_cast<char>(pick(256)));
          break;
        default:  // Delete a byte.
          s.erase(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size())));
      }
    }
    CheckAgainstProtobuf(s, spec, &agreed);
    if (HasFatalFailure()) return;
  }
  // Most mutations still parse with protobuf, so the comparison had teeth.
  EXPECT_GT(agreed, 2000);
}

TEST(ParseExampleFuzzTest, RandomBytesNeverCrash) {
  google::protobuf::LogSilencer quiet;
  const FeatureSpec spec = FuzzSpec();
  std::mt19937 rng(99);
  int agreed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const size_t n = std::uniform_int_distribution<size_t>(0, 64)(rng);
    std::string s(n, '\0');
    // Bias toward small field numbers and wire type 2, so parsing goes deep.
    for (char& c : s) {
      c = static_cast<char>(std::uniform_int_distribution<int>(0, 3)(rng) == 0
                                ? 0x0a + 8 * std::uniform_int_distribution<int>(0, 2)(rng)
                                : std::uniform_int_distribution<int>(0, 255)(rng));
    }
    CheckAgainstProtobuf(s, spec, &agreed);
    if (HasFatalFailure()) return;
  }
}

// ---- Golden data written by an independent TFRecord implementation.

// Splits a TFRecord file into its payloads, by the framing alone (uint64 LE
// length, 4-byte length CRC, data, 4-byte data CRC); the CRCs are not checked
// here: the TFRecord reader has its own tests.
std::vector<std::string> ReadRecordPayloads(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 12) {
      ADD_FAILURE() << "truncated header at " << pos;
      break;
    }
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<uint8_t>(data[pos + i]);
    pos += 12;
    if (data.size() - pos < len + 4) {
      ADD_FAILURE() << "truncated record at " << pos;
      break;
    }
    records.push_back(data.substr(pos, len));
    pos += len + 4;
  }
  return records;
}

TEST(ParseExampleGoldenTest, Small100) {
  const std::vector<std::string> records =
      ReadRecordPayloads(std::string(SLUICE_TEST_DATA) + "/small100.tfrecord");
  ASSERT_EQ(records.size(), 100u);
  absl::StatusOr<ExampleParser> parser = ExampleParser::Create(FeatureSpec{{
      {"id", FixedLenFeature{.dtype = DType::kInt64}},
      {"vec", FixedLenFeature{.dtype = DType::kFloat32, .shape = {3}}},
      {"name", FixedLenFeature{.dtype = DType::kBytes}},
  }});
  ASSERT_TRUE(parser.ok()) << parser.status();
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<std::vector<Tensor>> t = parser->Parse(records[i]);
    ASSERT_TRUE(t.ok()) << "record " << i << ": " << t.status();
    EXPECT_EQ((*t)[0].scalar<int64_t>(), i);
    EXPECT_THAT(Values<float>((*t)[1]),
                ElementsAre(i * 0.5f, static_cast<float>(-i), static_cast<float>(1.0 / (i + 1))))
        << "record " << i;
    EXPECT_EQ((*t)[2].scalar<std::string>(), absl::StrCat("item-", i));
    // The free function agrees with the compiled parser.
    absl::StatusOr<std::vector<Tensor>> again = ParseExample(records[i], parser->spec());
    ASSERT_TRUE(again.ok());
    for (int k = 0; k < 3; ++k) EXPECT_TRUE((*again)[k].Equals((*t)[k]));
  }
}

TEST(ParseExampleGoldenTest, Images3) {
  const std::vector<std::string> records =
      ReadRecordPayloads(std::string(SLUICE_TEST_DATA) + "/images3.tfrecord");
  ASSERT_EQ(records.size(), 3u);
  const FeatureSpec spec{{
      {"image/encoded", FixedLenFeature{.dtype = DType::kBytes}},
      {"image/class/label", FixedLenFeature{.dtype = DType::kInt64}},
      {"image/format", FixedLenFeature{.dtype = DType::kBytes}},
      {"image/object/bbox/xmin", VarLenFeature{DType::kFloat32}},
  }};
  // From images3.expected.json.
  const int64_t labels[] = {1, 4, 7};
  const size_t jpeg_bytes[] = {57517, 58200, 68135};
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::vector<Tensor>> t = ParseExample(records[i], spec);
    ASSERT_TRUE(t.ok()) << t.status();
    const std::string& jpeg = (*t)[0].scalar<std::string>();
    EXPECT_EQ(jpeg.size(), jpeg_bytes[i]);
    EXPECT_EQ(jpeg.substr(0, 2), "\xff\xd8");  // JPEG start-of-image marker.
    EXPECT_EQ((*t)[1].scalar<int64_t>(), labels[i]);
    EXPECT_EQ((*t)[2].scalar<std::string>(), "jpeg");
    EXPECT_THAT(Values<float>((*t)[3]), ElementsAre(0.25f, 0.5f));
  }
}

}  // namespace
}  // namespace sluice
