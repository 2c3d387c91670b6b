#include "ops/rescaling.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Floats;
using ::sluice::testing::Values;
using ::testing::ElementsAre;

TEST(RescalingTest, MultipliesThenAdds) {
  auto out = Rescaling(1.0f / 127.5f, -1.0f).Apply(Floats({0, 127.5f, 255}, Shape{3}));
  ASSERT_TRUE(out.ok());
  EXPECT_THAT(Values(*out), ElementsAre(-1, 0, 1));
  Tensor bytes(DType::kUint8, Shape{2, 1, 2});
  for (int i = 0; i < 4; ++i) bytes.data<uint8_t>()[i] = static_cast<uint8_t>(i * 85);
  out = Rescaling(1.0f / 255).Apply(bytes);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->shape(), (Shape{2, 1, 2}));
  EXPECT_THAT(Values(*out), ElementsAre(0, 85 * (1.0f / 255), 170 * (1.0f / 255), 1));
  EXPECT_FALSE(Rescaling(2).Apply(Tensor(DType::kInt64, Shape{1})).ok());
}

}  // namespace
}  // namespace sluice
