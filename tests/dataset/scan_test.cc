#include <cstdint>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::Ints;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A running sum: the state and the output are both the sum so far. Fails on `fail_on`.
ScanFn RunningSum(int64_t fail_on = -1) {
  return [fail_on](Element state, Element e) -> absl::StatusOr<std::pair<Element, Element>> {
    const int64_t x = e[0].scalar<int64_t>();
    if (x == fail_on) return absl::InvalidArgumentError(absl::StrCat("cannot add ", x));
    const int64_t sum = state[0].scalar<int64_t>() + x;
    return std::make_pair(Element{Tensor::Scalar<int64_t>(sum)},
                          Element{Tensor::Scalar<int64_t>(sum)});
  };
}

TEST(ScanTest, CarriesTheStateThroughTheElements) {
  auto ds = Dataset::Range(1, 6).Scan({Tensor::Scalar<int64_t>(100)}, RunningSum());
  EXPECT_EQ(ds.Cardinality(), 5);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(101, 103, 106, 110, 115));
}

TEST(ScanTest, AFailedCallTakesTheElementsPlaceAndKeepsTheState) {
  auto ds = Dataset::Range(1, 6).Scan({Tensor::Scalar<int64_t>(0)}, RunningSum(/*fail_on=*/3));
  auto failed = Collect(ds);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("Scan[1] at element 2: cannot add 3"));
  auto skipped = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  EXPECT_THAT(Ints(*skipped), ElementsAre(1, 3, 7, 12));  // 3 was never added
}

// A state whose dtype changes is refused (tf.data's rule); a state whose shape grows is not.
TEST(ScanTest, TheStateKeepsItsDtypesButNotItsShape) {
  ScanFn to_float = [](Element state, Element e) -> absl::StatusOr<std::pair<Element, Element>> {
    const float sum = static_cast<float>(state[0].scalar<int64_t>() + e[0].scalar<int64_t>());
    return std::make_pair(Element{Tensor::Scalar<float>(sum)}, Element{std::move(e)});
  };
  auto failed = Collect(Dataset::Range(3).Scan({Tensor::Scalar<int64_t>(0)}, to_float));
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr("Scan[1] at element 0: scan function returned a new state of (float32[]) "
                        "for a state of (int64[]): the state keeps its components"));
  ScanFn append = [](Element state, Element e) -> absl::StatusOr<std::pair<Element, Element>> {
    const int64_t n = state[0].num_elements();
    Tensor longer(DType::kInt64, Shape{n + 1});
    for (int64_t i = 0; i < n; ++i) longer.data<int64_t>()[i] = state[0].data<int64_t>()[i];
    longer.data<int64_t>()[n] = e[0].scalar<int64_t>();
    return std::make_pair(Element{longer}, Element{longer});
  };
  auto grown = Collect(Dataset::Range(3).Scan({Tensor(DType::kInt64, Shape{0})}, append));
  ASSERT_TRUE(grown.ok()) << grown.status();
  EXPECT_EQ((*grown)[2][0].num_elements(), 3);
}

TEST(ScanTest, CheckpointsHoldTheState) {
  auto ds = Dataset::Range(0, 40)
                .Shuffle(8, {.seed = 3})
                .Scan({Tensor::Scalar<int64_t>(0)}, RunningSum());
  ExpectCheckpointsResumeExactly(ds, {0, 1, 7, 20, 39, 40});
}

}  // namespace
}  // namespace sluice
