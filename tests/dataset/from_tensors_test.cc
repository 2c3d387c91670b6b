#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;

Element Pair() {
  return {Tensor::FromVector<int64_t>({1, 2, 3}), Tensor::Scalar<std::string>("x")};
}

TEST(FromTensorsTest, YieldsTheElementOnceSharingItsBuffers) {
  const Element e = Pair();
  auto ds = Dataset::FromTensors(e);
  EXPECT_EQ(ds.Cardinality(), 1);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE(ElementsEqual((*out)[0], e));
  EXPECT_TRUE((*out)[0][0].SharesBufferWith(e[0]));  // No copy of the data.
}

TEST(FromTensorsTest, EmptyElementIsStillOneElement) {
  auto out = Collect(Dataset::FromTensors(Element{}));
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE((*out)[0].empty());
}

TEST(FromTensorsTest, EndOfSequenceRepeats) {
  auto it = Dataset::FromTensors(Pair()).MakeIterator();
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
}

TEST(FromTensorsTest, EachIteratorStartsOver) {
  auto ds = Dataset::FromTensors(Pair());
  for (int i = 0; i < 2; ++i) {
    auto out = Collect(ds);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->size(), 1u);
  }
}

TEST(FromTensorsTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::FromTensors(Pair()), {0, 1});
}

}  // namespace
}  // namespace sluice
