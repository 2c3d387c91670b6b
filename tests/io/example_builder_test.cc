#include "io/example_builder.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;

// Protobuf's deterministic serialization (map entries sorted by key).
std::string DeterministicBytes(const proto::Example& ex) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    ex.SerializeToCodedStream(&coded);
  }
  return out;
}

template <typename R>
auto ToVector(const R& r) {
  return std::vector<typename R::value_type>(r.begin(), r.end());
}

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ExampleBuilderTest, ProtobufReadsBackEveryValue) {
  const std::string bytes =
      ExampleBuilder()
          .AddInt64("ints", {0, 1, -1, 300, kInt64Min})
          .AddFloat("floats", {1.5f, -0.0f, kInf, 3e-40f})
          .AddBytes("strs", {"", std::string("\0\xff", 2), std::string(200, 'x')})
          .AddInt64("empty", {})
          .Serialize();
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(bytes));
  const auto& f = ex.features().feature();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_THAT(ToVector(f.at("ints").int64_list().value()), ElementsAre(0, 1, -1, 300, kInt64Min));
  const std::vector<float> floats = ToVector(f.at("floats").float_list().value());
  ASSERT_EQ(floats.size(), 4u);
  EXPECT_EQ(floats[0], 1.5f);
  EXPECT_TRUE(std::signbit(floats[1]));
  EXPECT_EQ(floats[2], kInf);
  EXPECT_EQ(floats[3], 3e-40f);  // Subnormal, bit for bit.
  EXPECT_THAT(ToVector(f.at("strs").bytes_list().value()),
              ElementsAre("", std::string("\0\xff", 2), std::string(200, 'x')));
  // An empty list is still that kind of list.
  EXPECT_EQ(f.at("empty").kind_case(), proto::Feature::kInt64List);
  EXPECT_EQ(f.at("empty").int64_list().value_size(), 0);
}

TEST(ExampleBuilderTest, BytesEqualProtobufDeterministicSerialization) {
  ExampleBuilder b;
  b.AddBytes("zeta", {"z"}).AddFloat("alpha", {1, 2}).AddInt64("mid", {-2, 5}).AddInt64("none", {});
  proto::Example ex;
  auto& m = *ex.mutable_features()->mutable_feature();
  m["zeta"].mutable_bytes_list()->add_value("z");
  m["alpha"].mutable_float_list()->add_value(1);
  m["alpha"].mutable_float_list()->add_value(2);
  m["mid"].mutable_int64_list()->add_value(-2);
  m["mid"].mutable_int64_list()->add_value(5);
  m["none"].mutable_int64_list();
  EXPECT_EQ(b.Serialize(), DeterministicBytes(ex));
  // Deterministic: the order of Add calls does not matter.
  ExampleBuilder c;
  c.AddInt64("none", {}).AddInt64("mid", {-2, 5}).AddFloat("alpha", {1, 2}).AddBytes("zeta", {"z"});
  EXPECT_EQ(b.Serialize(), c.Serialize());
}

TEST(ExampleBuilderTest, LargeValuesNeedMultiByteLengths) {
  const std::string big(70000, 'j');  // A three-byte varint length.
  std::vector<int64_t> many(5000);
  for (int i = 0; i < 5000; ++i) many[i] = int64_t{i} * 1000003;
  ExampleBuilder b;
  b.AddBytes("image/encoded", {big}).AddInt64("many", many);
  proto::Example ex;
  (*ex.mutable_features()->mutable_feature())["image/encoded"].mutable_bytes_list()->add_value(big);
  for (int64_t v : many) {
    (*ex.mutable_features()->mutable_feature())["many"].mutable_int64_list()->add_value(v);
  }
  EXPECT_EQ(b.Serialize(), DeterministicBytes(ex));
}

TEST(ExampleBuilderTest, AddingANameAgainReplacesIt) {
  ExampleBuilder b;
  b.AddInt64("x", {1, 2}).AddFloat("x", {3});
  proto::Example ex;
  ASSERT_TRUE(ex.ParseFromString(b.Serialize()));
  ASSERT_EQ(ex.features().feature().size(), 1u);
  EXPECT_THAT(ToVector(ex.features().feature().at("x").float_list().value()), ElementsAre(3.0f));
}

TEST(ExampleBuilderTest, EmptyAndClear) {
  ExampleBuilder b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.Serialize(), "");
  b.AddInt64("x", {1});
  EXPECT_FALSE(b.empty());
  b.Clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.Serialize(), "");
}

}  // namespace
}  // namespace sluice
