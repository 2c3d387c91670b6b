#include <string>
#include <vector>

#include "dataset/proto/iterator_state.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using W = std::vector<int64_t>;

// Each element's first component as a list of ints.
std::vector<W> Rows(const Dataset& ds) {
  auto elements = Collect(ds);
  EXPECT_TRUE(elements.ok()) << elements.status();
  std::vector<W> out;
  if (!elements.ok()) return out;
  for (const Element& e : *elements) {
    out.emplace_back(e[0].data<int64_t>(), e[0].data<int64_t>() + e[0].num_elements());
  }
  return out;
}

absl::StatusOr<int64_t> Parity(const Element& e) { return e[0].scalar<int64_t>() % 2; }

absl::StatusOr<Dataset> BatchAll(int64_t, Dataset window) { return window.Batch(100); }

// tf.data.Dataset.range(10).group_by_window(lambda x: x % 2, lambda k, w: w.batch(3), 3) gives
// [0 2 4] [1 3 5] [6 8] [7 9]: full windows as they fill, then the rest in key order.
TEST(GroupByWindowTest, FullWindowsAsTheyFillThenTheRestInKeyOrder) {
  EXPECT_THAT(Rows(Dataset::Range(10).GroupByWindow(Parity, BatchAll, 3)),
              ElementsAre(W{0, 2, 4}, W{1, 3, 5}, W{6, 8}, W{7, 9}));
  // Keys seen in descending order are still flushed in ascending order at the end.
  const KeyFn descending = [](const Element& e) -> absl::StatusOr<int64_t> {
    return -e[0].scalar<int64_t>();
  };
  EXPECT_THAT(Rows(Dataset::Range(3).GroupByWindow(descending, BatchAll, 2)),
              ElementsAre(W{2}, W{1}, W{0}));
  EXPECT_THAT(Rows(Dataset::Range(0).GroupByWindow(Parity, BatchAll, 2)), ElementsAre());
}

TEST(GroupByWindowTest, WindowSizePerKeyAndTheKeyReachesTheReduction) {
  // Key 0 in windows of 2, key 1 in windows of 4; the reduction appends the key.
  const WindowSizeFn size = [](int64_t key) -> absl::StatusOr<int64_t> { return 2 + 2 * key; };
  const ReduceFn tagged = [](int64_t key, Dataset window) -> absl::StatusOr<Dataset> {
    return window.Concatenate(Dataset::FromTensors({Tensor::Scalar<int64_t>(100 + key)}))
        .Batch(100);
  };
  EXPECT_THAT(
      Rows(Dataset::Range(12).GroupByWindow(Parity, tagged, size)),
      ElementsAre(W{0, 2, 100}, W{4, 6, 100}, W{1, 3, 5, 7, 101}, W{8, 10, 100}, W{9, 11, 101}));
}

TEST(GroupByWindowTest, AReductionMayEmitManyElementsOrNone) {
  const ReduceFn unbatched = [](int64_t, Dataset window) -> absl::StatusOr<Dataset> {
    return window;
  };
  EXPECT_THAT(Rows(Dataset::Range(6).GroupByWindow(Parity, unbatched, 2)),
              ElementsAre(W{0}, W{2}, W{1}, W{3}, W{4}, W{5}));
  const ReduceFn only_odd = [](int64_t key, Dataset window) -> absl::StatusOr<Dataset> {
    return key == 1 ? window.Batch(10) : window.Take(0);
  };
  EXPECT_THAT(Rows(Dataset::Range(6).GroupByWindow(Parity, only_odd, 2)),
              ElementsAre(W{1, 3}, W{5}));
}

TEST(GroupByWindowTest, ErrorsNameTheElementAndIgnoreErrorsSkipsIt) {
  const KeyFn fails_at_3 = [](const Element& e) -> absl::StatusOr<int64_t> {
    if (e[0].scalar<int64_t>() == 3) return absl::InvalidArgumentError("no key for 3");
    return e[0].scalar<int64_t>() % 2;
  };
  auto it = Dataset::Range(6).GroupByWindow(fails_at_3, BatchAll, 2).MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());  // [0 2]
  auto bad = it->GetNext();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("GroupByWindow[1] at element 3: no key for 3"));
  EXPECT_THAT(Rows(Dataset::Range(6).GroupByWindow(fails_at_3, BatchAll, 2).IgnoreErrors()),
              ElementsAre(W{0, 2}, W{1, 5}, W{4}));

  auto zero = Dataset::Range(3).GroupByWindow(Parity, BatchAll, 0).MakeIterator()->GetNext();
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), HasSubstr("the window size of key 0 is 0"));

  const ReduceFn refuses = [](int64_t key, Dataset) -> absl::StatusOr<Dataset> {
    return absl::FailedPreconditionError(absl::StrCat("no reduction for ", key));
  };
  auto reduced = Dataset::Range(3).GroupByWindow(Parity, refuses, 2).MakeIterator()->GetNext();
  EXPECT_EQ(reduced.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(reduced.status().message(), HasSubstr("reducing window 0 (key 0): no reduction"));
  // A group whose reduction fails at the end of the input is passed, its error in its place:
  // IgnoreErrors skips it and the pipeline ends (it used to retry the group for ever).
  const ReduceFn refuses_odd = [](int64_t key, Dataset window) -> absl::StatusOr<Dataset> {
    if (key == 1) return absl::FailedPreconditionError("no odd windows");
    return window.Batch(10);
  };
  EXPECT_THAT(Rows(Dataset::Range(5).GroupByWindow(Parity, refuses_odd, 10).IgnoreErrors()),
              ElementsAre(W{0, 2, 4}));
}

TEST(GroupByWindowTest, CheckpointsResumeExactly) {
  const ReduceFn unbatched = [](int64_t, Dataset window) -> absl::StatusOr<Dataset> {
    return window;
  };
  const KeyFn mod3 = [](const Element& e) -> absl::StatusOr<int64_t> {
    return e[0].scalar<int64_t>() % 3;
  };
  // Mid-window (unbatched), between windows, and in the flush at the end.
  ExpectCheckpointsResumeExactly(Dataset::Range(20).GroupByWindow(mod3, unbatched, 4),
                                 {0, 1, 2, 3, 5, 8, 12, 15, 17, 19, 20});
  ExpectCheckpointsResumeExactly(Dataset::Range(20).GroupByWindow(mod3, BatchAll, 4),
                                 {0, 1, 2, 3, 4, 5, 6});
  // A reduction with randomness restores with the same seed.
  const ReduceFn shuffled = [](int64_t, Dataset window) -> absl::StatusOr<Dataset> {
    return window.Shuffle(10);
  };
  ExpectCheckpointsResumeExactly(
      Dataset::Range(40).GroupByWindow(mod3, shuffled, 5).WithOptions({.seed = 7}),
      {0, 3, 11, 26, 39});
}

TEST(GroupByWindowTest, RestoreRefusesGroupsTheCheckpointDoesNotHold) {
  // After the first window ([0 3 6 9]) keys 1 and 2 hold three elements each.
  const KeyFn mod3 = [](const Element& e) -> absl::StatusOr<int64_t> {
    return e[0].scalar<int64_t>() % 3;
  };
  const Dataset ds = Dataset::Range(12).GroupByWindow(mod3, BatchAll, 4);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  proto::IteratorCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(*saved));
  ASSERT_EQ(checkpoint.root().node(), "GroupByWindow[1]");
  EXPECT_EQ(checkpoint.root().ints().at("groups"), 2);
  for (const auto& [key, value] : std::vector<std::pair<std::string, int64_t>>{
           {"groups", 1000}, {"group_size_0", 1 << 30}, {"group_key_1", 1}}) {
    proto::IteratorCheckpoint bad = checkpoint;
    (*bad.mutable_root()->mutable_ints())[key] = value;
    absl::Status restored = ds.MakeIterator()->Restore(bad.SerializeAsString());
    EXPECT_EQ(restored.code(), absl::StatusCode::kDataLoss) << key << ": " << restored;
  }
}

}  // namespace
}  // namespace sluice
