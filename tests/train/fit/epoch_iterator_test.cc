// EpochIterator (train/fit/epoch_iterator.h): the pass index on every element, passes repeated
// through one iterator, holding back, skipping to the next pass, and its position saved and
// restored exactly.
#include "train/fit/epoch_iterator.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>
#include <vector>

namespace sluice::train::fit {
namespace {

// {pass index, value} of the next element; {-1, -1} at the end.
std::pair<int64_t, int64_t> NextPair(EpochIterator& it) {
  absl::StatusOr<std::optional<Element>> e = it.Next();
  EXPECT_TRUE(e.ok()) << e.status();
  if (!e.ok() || !e->has_value()) return {-1, -1};
  return {EpochIterator::PassIndex(**e), (**e)[1].scalar<int64_t>()};
}

TEST(EpochIteratorTest, EveryElementCarriesItsIndexInThePassAndPassesRepeat) {
  EpochIterator it(Dataset::Range(10, 13), std::nullopt);
  std::vector<std::pair<int64_t, int64_t>> seen;
  for (int i = 0; i < 7; ++i) seen.push_back(NextPair(it));
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, int64_t>>{
                      {0, 10}, {1, 11}, {2, 12}, {0, 10}, {1, 11}, {2, 12}, {0, 10}}));
}

TEST(EpochIteratorTest, AnEmptyDatasetEnds) {
  EpochIterator it(Dataset::Range(0), std::nullopt);
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{-1, -1}));
}

TEST(EpochIteratorTest, AHeldBackElementComesNext) {
  EpochIterator it(Dataset::Range(3), std::nullopt);
  absl::StatusOr<std::optional<Element>> first = it.Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  it.HoldBack(**std::move(first));
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{1, 1}));
}

TEST(EpochIteratorTest, SkipToNextPassDropsTheRestOfThePass) {
  EpochIterator it(Dataset::Range(4), std::nullopt);
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{0, 0}));
  ASSERT_TRUE(it.SkipToNextPass().ok());
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{0, 0}));
  // A held-back first element of the next pass is kept.
  for (int i = 1; i < 4; ++i) NextPair(it);
  absl::StatusOr<std::optional<Element>> next_pass = it.Next();
  ASSERT_TRUE(next_pass.ok() && next_pass->has_value());
  it.HoldBack(**std::move(next_pass));
  ASSERT_TRUE(it.SkipToNextPass().ok());
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{0, 0}));
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{1, 1}));
}

TEST(EpochIteratorTest, ASavedPositionWithAHeldBackElementRestoresExactly) {
  const Dataset data = Dataset::Range(5).Shuffle(5, {.seed = 3});
  EpochIterator it(data, /*seed=*/11);
  for (int i = 0; i < 3; ++i) NextPair(it);
  absl::StatusOr<std::optional<Element>> held = it.Next();
  ASSERT_TRUE(held.ok() && held->has_value());
  it.HoldBack(**std::move(held));
  RankPosition position;
  ASSERT_TRUE(it.Save(position).ok());
  ASSERT_TRUE(position.pending_element.has_value());

  EpochIterator restored(data, /*seed=*/11);
  ASSERT_TRUE(restored.Restore(position, "ckpt").ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(NextPair(restored), NextPair(it)) << i;
}

TEST(EpochIteratorTest, ARestoredElementWithoutItsIndexIsDataLossNamingTheFile) {
  EpochIterator it(Dataset::Range(3), std::nullopt);
  RankPosition position;
  position.pending_element = Element{Tensor::Scalar<float>(1.5f)};
  const absl::Status s = it.Restore(position, "run/ckpt");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("run/ckpt: the element held for the next step: an element without "
                             "its pass index"),
            std::string::npos)
      << s;
}

TEST(EpochIteratorTest, ARestoredElementOfAnotherTypeThanThePipelinesIsDataLoss) {
  // Range's spec is known: {pass index, int64 scalar}.
  EpochIterator it(Dataset::Range(3), std::nullopt);
  RankPosition position;
  position.pending_element =
      Element{Tensor::Scalar<int64_t>(0), Tensor::FromVector<int64_t>({1, 2})};
  const absl::Status s = it.Restore(position, "run/ckpt");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("run/ckpt: the element held for the next step is not (int64[], "
                             "int64[]): component 1 is int64[2], expected int64[]"),
            std::string::npos)
      << s;
  // One of its elements restores, and is the next.
  position.pending_element = Element{Tensor::Scalar<int64_t>(0), Tensor::Scalar<int64_t>(2)};
  ASSERT_TRUE(it.Restore(position, "run/ckpt").ok());
  EXPECT_EQ(NextPair(it), (std::pair<int64_t, int64_t>{0, 2}));
}

}  // namespace
}  // namespace sluice::train::fit
