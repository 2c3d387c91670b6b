#include "core/tensor_spec.h"

#include <string>

#include "core/tensor.h"
#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(TensorSpecTest, MatchesTheDtypeAndACompatibleShape) {
  const TensorSpec spec{DType::kInt64, {PartialShape::kUnknownDim, 2}};
  EXPECT_EQ(spec.DebugString(), "int64[?, 2]");
  EXPECT_TRUE(spec.IsCompatibleWith(Tensor(DType::kInt64, Shape{5, 2})));
  EXPECT_FALSE(spec.IsCompatibleWith(Tensor(DType::kInt32, Shape{5, 2})));
  EXPECT_FALSE(spec.IsCompatibleWith(Tensor(DType::kInt64, Shape{5, 3})));
  EXPECT_FALSE(spec.IsCompatibleWith(Tensor::Scalar<int64_t>(1)));
  EXPECT_TRUE(spec.IsCompatibleWith(TensorSpec{DType::kInt64, {3, PartialShape::kUnknownDim}}));
  EXPECT_FALSE(spec.IsCompatibleWith(TensorSpec{DType::kFloat32, {3, 2}}));
}

TEST(TensorSpecTest, FromTensorIsExactlyThatTensor) {
  const TensorSpec spec = TensorSpec::FromTensor(Tensor::Scalar<std::string>("a"));
  EXPECT_EQ(spec, (TensorSpec{DType::kBytes, {}}));
  EXPECT_EQ(spec.DebugString(), "bytes[]");
  EXPECT_EQ((TensorSpec{DType::kFloat32, PartialShape::UnknownRank()}).DebugString(),
            "float32<unknown>");
}

}  // namespace
}  // namespace sluice
