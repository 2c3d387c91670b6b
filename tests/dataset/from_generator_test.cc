#include <atomic>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::Ints;
using ::sluice::testing::Iota;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// A factory of generators counting from 0 to n - 1; counts the generators made.
std::function<Generator()> Counter(int64_t n, std::shared_ptr<std::atomic<int>> made = nullptr) {
  return [n, made]() -> Generator {
    if (made) ++*made;
    auto i = std::make_shared<int64_t>(0);
    return [n, i]() -> absl::StatusOr<std::optional<Element>> {
      if (*i >= n) return std::nullopt;
      return Element{Tensor::Scalar<int64_t>((*i)++)};
    };
  };
}

TEST(FromGeneratorTest, YieldsTheGeneratorsElements) {
  auto made = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::FromGenerator(Counter(10, made));
  EXPECT_EQ(*made, 0);  // Nothing runs before an iterator asks.
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAreArray(Iota(0, 10)));
  EXPECT_EQ(*made, 1);
  EXPECT_EQ(ds.Cardinality(), kUnknownCardinality);
}

TEST(FromGeneratorTest, EachIteratorGetsItsOwnGenerator) {
  auto made = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::FromGenerator(Counter(3, made));
  auto a = ds.MakeIterator();
  auto b = ds.MakeIterator();
  auto a0 = a->GetNext();
  auto b0 = b->GetNext();
  auto a1 = a->GetNext();
  ASSERT_TRUE(a0.ok() && b0.ok() && a1.ok());
  EXPECT_EQ((**a0)[0].scalar<int64_t>(), 0);
  EXPECT_EQ((**b0)[0].scalar<int64_t>(), 0);
  EXPECT_EQ((**a1)[0].scalar<int64_t>(), 1);
  EXPECT_EQ(*made, 2);
}

TEST(FromGeneratorTest, EmptyGenerator) {
  auto out = Collect(Dataset::FromGenerator(Counter(0)));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST(FromGeneratorTest, EndIsFinalAndTheGeneratorIsNotCalledAgain) {
  auto calls = std::make_shared<int>(0);
  auto ds = Dataset::FromGenerator([calls]() -> Generator {
    return [calls]() -> absl::StatusOr<std::optional<Element>> {
      if (++*calls > 2) return std::nullopt;
      return Element{Tensor::Scalar<int64_t>(*calls)};
    };
  });
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  for (int i = 0; i < 3; ++i) {
    auto e = it->GetNext();
    ASSERT_TRUE(e.ok());
    EXPECT_FALSE(e->has_value());
  }
  EXPECT_EQ(*calls, 3);
}

TEST(FromGeneratorTest, GeneratorErrorIsNamedAndTheNextCallGoesOn) {
  auto ds = Dataset::FromGenerator([]() -> Generator {
    auto i = std::make_shared<int64_t>(0);
    return [i]() -> absl::StatusOr<std::optional<Element>> {
      const int64_t k = (*i)++;
      if (k == 2) return absl::InvalidArgumentError("bad input");
      if (k >= 5) return std::nullopt;
      return Element{Tensor::Scalar<int64_t>(k)};
    };
  });
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), "FromGenerator[0] at element 2: bad input");
  // Not sticky inside the pipeline: IgnoreErrors continues past it.
  auto out = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(0, 1, 3, 4));
}

TEST(FromGeneratorTest, EmptyGeneratorFromFactoryIsAnError) {
  auto out = Collect(Dataset::FromGenerator([] { return Generator(); }));
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("empty generator"));
}

TEST(FromGeneratorTest, CheckpointReplaysADeterministicGenerator) {
  auto made = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::FromGenerator(Counter(20, made));
  testing::ExpectCheckpointsResumeExactly(ds, {0, 1, 7, 19, 20});
  // Per checkpoint, one for the run that was saved and one for the uninterrupted run (restored
  // from that run's start) and, before the end, one for the restored run.
  EXPECT_EQ(*made, 5 + 5 + 4);
}

TEST(FromGeneratorTest, CheckpointAcrossAnErrorUnderIgnoreErrors) {
  auto ds = Dataset::FromGenerator([]() -> Generator {
              auto i = std::make_shared<int64_t>(0);
              return [i]() -> absl::StatusOr<std::optional<Element>> {
                const int64_t k = (*i)++;
                if (k % 4 == 3) return absl::DataLossError("every fourth");
                if (k >= 12) return std::nullopt;
                return Element{Tensor::Scalar<int64_t>(k)};
              };
            }).IgnoreErrors();
  testing::ExpectCheckpointsResumeExactly(ds, {0, 3, 4, 8, 9});
}

TEST(FromGeneratorTest, RestoreReportsAGeneratorThatIsNotDeterministic) {
  auto runs = std::make_shared<int>(0);
  auto ds = Dataset::FromGenerator([runs]() -> Generator {
    const int64_t n = ++*runs == 1 ? 10 : 2;  // The second run is shorter.
    auto i = std::make_shared<int64_t>(0);
    return [n, i]() -> absl::StatusOr<std::optional<Element>> {
      if (*i >= n) return std::nullopt;
      return Element{Tensor::Scalar<int64_t>((*i)++)};
    };
  });
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 5).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok());
  auto fresh = ds.MakeIterator();
  absl::Status s = fresh->Restore(*saved);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("ended after 2 calls"));
  EXPECT_THAT(s.message(), HasSubstr("must be deterministic"));
}

}  // namespace
}  // namespace sluice
