#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::Ints;
using ::testing::HasSubstr;

// Input i yields i * 1000 + j for j = 0, 1, ...: the source and the position of each element.
Dataset Source(int64_t i, int64_t n = -1) {
  Dataset d = n < 0 ? Dataset::Range(i * 1000, i * 1000 + 1000).Repeat()
                    : Dataset::Range(i * 1000, i * 1000 + n);
  return d;
}

TEST(SampleFromDatasetsTest, TheMixMatchesTheWeights) {
  const std::vector<double> weights = {0.5, 0.3, 0.2};
  auto ds = Dataset::SampleFromDatasets({Source(0), Source(1), Source(2)}, weights, {.seed = 7})
                .Take(30000);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 30000u);
  std::vector<int64_t> counts(3, 0);
  for (int64_t v : Ints(*out)) ++counts[v / 1000];
  // Pearson's chi-square with 2 degrees of freedom; 13.82 is its 0.999 quantile. The draws are
  // a fixed function of the seed, so this never flakes.
  double chi2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double expected = weights[i] * 30000;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  EXPECT_LT(chi2, 13.82) << counts[0] << " " << counts[1] << " " << counts[2];
}

TEST(SampleFromDatasetsTest, EachInputKeepsItsOrderAndTheSeedDecides) {
  auto make = [](uint64_t seed) {
    return Dataset::SampleFromDatasets({Source(0, 50), Source(1, 50)}, {1, 1}, {.seed = seed});
  };
  auto a = Collect(make(1)), b = Collect(make(1)), c = Collect(make(2));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(Ints(*a), Ints(*b));
  EXPECT_NE(Ints(*a), Ints(*c));
  // Every element of both inputs, each input in its own order (the default goes on after the
  // first input ends).
  ASSERT_EQ(a->size(), 100u);
  int64_t next[2] = {0, 1000};
  for (int64_t v : Ints(*a)) {
    const int src = static_cast<int>(v / 1000);
    EXPECT_EQ(v, next[src]++);
  }
}

TEST(SampleFromDatasetsTest, StopOnEmptyDatasetEndsWithTheFirstInputThatEnds) {
  auto ds = Dataset::SampleFromDatasets({Source(0, 5), Source(1)}, {0.5, 0.5},
                                        {.seed = 3, .stop_on_empty_dataset = true});
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  int64_t from_first = 0;
  for (int64_t v : Ints(*out)) from_first += v < 1000;
  EXPECT_EQ(from_first, 5);  // all of the short input, then the end when it is drawn again
  EXPECT_LT(out->size(), 100u);
}

TEST(SampleFromDatasetsTest, ZeroWeightInputsAreNeverDrawn) {
  auto out = Collect(Dataset::SampleFromDatasets({Source(0, 20), Source(1, 20)}, {1, 0}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Ints(*out), ::sluice::testing::Iota(0, 20));
}

TEST(SampleFromDatasetsTest, CheckpointsResumeExactly) {
  auto ds = Dataset::SampleFromDatasets({Source(0, 30), Source(1, 10).Map([](Element e) {
                                           return absl::StatusOr<Element>(std::move(e));
                                         }),
                                         Source(2, 40)},
                                        {0.2, 0.5, 0.3}, {.seed = 11});
  ExpectCheckpointsResumeExactly(ds, {0, 1, 9, 25, 60, 80});
}

TEST(SampleFromDatasetsTest, BadWeightsAreErrors) {
  for (const std::vector<double>& w :
       std::vector<std::vector<double>>{{1}, {1, -1}, {0, 0}, {1, std::nan("")}}) {
    auto out = Collect(Dataset::SampleFromDatasets({Source(0, 3), Source(1, 3)}, w));
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(out.status().message()), HasSubstr("SampleFromDatasets"));
  }
}

}  // namespace
}  // namespace sluice
