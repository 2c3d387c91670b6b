#include "dataset/iterator.h"

#include <atomic>

#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"

namespace sluice {
namespace {

TEST(IteratorTest, InitializeMakesNodesWithoutStartingWork) {
  std::atomic<int> calls{0};
  auto ds = Dataset::Range(10).Map(
      [&calls](Element e) -> absl::StatusOr<Element> {
        ++calls;
        return e;
      },
      {.num_parallel_calls = 2});
  auto it = ds.MakeIterator();
  EXPECT_TRUE(it->Stats().empty());
  ASSERT_TRUE(it->Initialize().ok());
  ASSERT_TRUE(it->Initialize().ok());  // Idempotent.
  auto stats = it->Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].name, "Map[1]");
  EXPECT_EQ(stats[1].parallelism, 2);
  EXPECT_EQ(calls.load(), 0);  // The parallel Map starts at the first GetNext.
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((**first)[0].scalar<int64_t>(), 0);
}

TEST(IteratorTest, InitializeReportsCreationErrorsStickily) {
  auto it = Dataset::Range(0, 10, 0).MakeIterator();  // step 0 is invalid
  absl::Status s = it->Initialize();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(it->GetNext().status(), s);
}

}  // namespace
}  // namespace sluice
