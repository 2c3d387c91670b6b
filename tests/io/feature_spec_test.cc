#include "io/feature_spec.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

using ::testing::HasSubstr;

void ExpectInvalid(const absl::Status& s, absl::string_view message) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(message));
}

TEST(ValidateSpecTest, AcceptsAWellFormedSpec) {
  FeatureSpec spec{{
      {"a", FixedLenFeature{.dtype = DType::kInt64}},
      {"b", FixedLenFeature{.dtype = DType::kFloat32,
                            .shape = {2},
                            .default_value = Tensor::FromVector<float>({1, 2})}},
      {"c", VarLenFeature{DType::kBytes}},
      {"", FixedLenFeature{.dtype = DType::kBytes, .shape = {0}}},
  }};
  EXPECT_TRUE(ValidateSpec(spec).ok()) << ValidateSpec(spec);
  EXPECT_TRUE(ValidateSpec(FeatureSpec{}).ok());
}

TEST(ValidateSpecTest, RejectsDTypesThatNoFeatureHolds) {
  ExpectInvalid(ValidateSpec(FeatureSpec{{{"img", FixedLenFeature{.dtype = DType::kUint8}}}}),
                "feature 'img': dtype uint8 is not one of int64, float32, bytes");
  ExpectInvalid(ValidateSpec(FeatureSpec{{{"h", VarLenFeature{DType::kFloat16}}}}),
                "feature 'h': dtype float16");
}

TEST(ValidateSpecTest, RejectsBadShapes) {
  ExpectInvalid(
      ValidateSpec(FeatureSpec{{{"v", FixedLenFeature{.dtype = DType::kInt64, .shape = {2, -1}}}}}),
      "feature 'v': shape [2, -1] has a negative dimension");
  ExpectInvalid(ValidateSpec(FeatureSpec{
                    {{"v", FixedLenFeature{.dtype = DType::kInt64, .shape = {1 << 30, 1 << 30}}}}}),
                "feature 'v': shape [1073741824, 1073741824] has too many elements");
}

TEST(ValidateSpecTest, DefaultMustMatchDTypeAndShape) {
  ExpectInvalid(ValidateSpec(FeatureSpec{
                    {{"v", FixedLenFeature{.dtype = DType::kFloat32,
                                           .shape = {3},
                                           .default_value = Tensor::FromVector<float>({1, 2})}}}}),
                "feature 'v': default value is float32[2], the spec wants float32[3]");
  ExpectInvalid(ValidateSpec(FeatureSpec{
                    {{"v", FixedLenFeature{.dtype = DType::kFloat32,
                                           .default_value = Tensor::Scalar<int64_t>(1)}}}}),
                "feature 'v': default value is int64[], the spec wants float32[]");
  // Same element count, other shape: still rejected (no silent reshape).
  ExpectInvalid(
      ValidateSpec(FeatureSpec{
          {{"v", FixedLenFeature{.dtype = DType::kInt64,
                                 .shape = {2, 2},
                                 .default_value = Tensor::FromVector<int64_t>({1, 2, 3, 4})}}}}),
      "default value is int64[4], the spec wants int64[2, 2]");
}

TEST(ValidateSpecTest, RejectsDuplicateNames) {
  ExpectInvalid(ValidateSpec(FeatureSpec{{{"x", VarLenFeature{DType::kInt64}},
                                          {"y", VarLenFeature{DType::kInt64}},
                                          {"x", FixedLenFeature{.dtype = DType::kFloat32}}}}),
                "feature 'x' appears twice in the spec (entries 0 and 2)");
}

TEST(ValidateSpecTest, AllowMissingBelongsToSequenceSpecs) {
  const FeatureSpec spec{{{"s", FixedLenFeature{.dtype = DType::kInt64, .allow_missing = true}}}};
  ExpectInvalid(ValidateSpec(spec), "feature 's': allow_missing applies to sequence features only");
  EXPECT_TRUE(ValidateSequenceSpec(spec).ok());
}

TEST(ValidateSpecTest, SequenceSpecsTakeNoDefault) {
  ExpectInvalid(ValidateSequenceSpec(FeatureSpec{
                    {{"s", FixedLenFeature{.dtype = DType::kInt64,
                                           .default_value = Tensor::Scalar<int64_t>(0)}}}}),
                "sequence feature 's': default_value is not supported");
  ExpectInvalid(ValidateSequenceSpec(FeatureSpec{{{"s", VarLenFeature{DType::kInt32}}}}),
                "feature 's': dtype int32");
}

TEST(ConfigDTypeTest, ReadsEitherKind) {
  const FeatureSpec spec{{{"f", FixedLenFeature{.dtype = DType::kBytes, .shape = {2}}},
                          {"v", VarLenFeature{DType::kFloat32}}}};
  EXPECT_EQ(ConfigDType(spec.features[0].second), DType::kBytes);
  EXPECT_EQ(ConfigDType(spec.features[1].second), DType::kFloat32);
}

// Lookups with the hint (entries met in sorted order), without it, and for
// names not in the spec, for a linear (small) and a hashed (large) index.
void CheckIndex(int n) {
  FeatureSpec spec;
  for (int i = n - 1; i >= 0; --i) {
    spec.features.emplace_back(absl::StrCat("k", 100 + i), VarLenFeature{DType::kInt64});
  }
  absl::StatusOr<internal::FeatureIndex> index = internal::FeatureIndex::Build(spec);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->size(), static_cast<size_t>(n));
  size_t hint = 0;
  for (int i = 0; i < n; ++i) {  // Sorted order: k100, k101, ...
    EXPECT_EQ(index->Find(absl::StrCat("k", 100 + i), &hint), n - 1 - i);
    EXPECT_EQ(hint, static_cast<size_t>(i + 1));
  }
  hint = 0;
  for (int i = n - 1; i >= 0; --i)
    EXPECT_EQ(index->Find(absl::StrCat("k", 100 + i), &hint), n - 1 - i);
  EXPECT_EQ(index->Find("k99", &hint), -1);
  EXPECT_EQ(index->Find("", &hint), -1);
  EXPECT_EQ(index->Find(absl::StrCat("k", 100 + n), &hint), -1);
}

TEST(FeatureIndexTest, SmallSpec) { CheckIndex(5); }
TEST(FeatureIndexTest, LargeSpec) { CheckIndex(50); }

}  // namespace
}  // namespace sluice
