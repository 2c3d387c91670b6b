#include "ops/random_translation.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/ops/augmentation_test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Positions;
using ::sluice::testing::Values;
using ::testing::ElementsAreArray;

TEST(RandomTranslationTest, AFixedDrawOfWholePixelsIsExact) {
  // 4x5 image of 10 y + x; height factor 0.25 -> down 1 row, width factor -0.4 -> left 2 columns,
  // the uncovered parts filled with 0.
  auto translate =
      RandomTranslation::Create({0.25, 0.25}, {-0.4, -0.4}, {.fill_mode = FillMode::kConstant});
  ASSERT_TRUE(translate.ok());
  auto out = translate->Apply(Positions(1, 4, 5), 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values(*out), ElementsAreArray({0,  0,  0,  0, 0,  //
                                              2,  3,  4,  0, 0,  //
                                              12, 13, 14, 0, 0,  //
                                              22, 23, 24, 0, 0}));
}

TEST(RandomTranslationTest, SeededAndReproducible) {
  auto translate = RandomTranslation::Create(0.2, 0.2);
  ASSERT_TRUE(translate.ok());
  const Tensor batch = Positions(4, 10, 10);
  auto a = translate->Apply(batch, 1), b = translate->Apply(batch, 1),
       c = translate->Apply(batch, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(a->Equals(*b));
  EXPECT_FALSE(a->Equals(*c));
}

TEST(RandomTranslationTest, FactorsOutsideMinusOneToOneAreErrors) {
  EXPECT_EQ(RandomTranslation::Create(1.5, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomTranslation::Create({0, 0}, {0.5, 0.1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
