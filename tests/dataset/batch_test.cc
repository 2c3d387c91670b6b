#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataset/dataset_base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"
#include "tests/tensor_values.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::TestContext;
using ::sluice::testing::Values;
using ::testing::ElementsAre;

// (int64 scalar i, float32 [2] {i, i + 0.5}, bytes scalar "e<i>").
Dataset ThreeComponents(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    const float f = static_cast<float>(i);
    return Element{e[0], Tensor::FromVector<float>({f, f + 0.5f}),
                   Tensor::Scalar<std::string>(absl::StrCat("e", i))};
  });
}

absl::StatusOr<Element> FailAt(Element e, int64_t bad) {
  if (e[0].scalar<int64_t>() == bad) return absl::InvalidArgumentError("bad");
  return e;
}

TEST(BatchTest, RangeBy3KeepsTheRemainder) {
  auto ds = Dataset::Range(10).Batch(3);
  EXPECT_EQ(ds.Cardinality(), 4);
  EXPECT_EQ(ds.DebugString(), "Range(0, 10, 1) -> Batch(3)");
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  for (const Element& b : *out) {
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].dtype(), DType::kInt64);
  }
  EXPECT_EQ((*out)[0][0].shape(), Shape({3}));
  EXPECT_EQ((*out)[3][0].shape(), Shape({1}));
  EXPECT_THAT(Values<int64_t>((*out)[0][0]), ElementsAre(0, 1, 2));
  EXPECT_THAT(Values<int64_t>((*out)[1][0]), ElementsAre(3, 4, 5));
  EXPECT_THAT(Values<int64_t>((*out)[2][0]), ElementsAre(6, 7, 8));
  EXPECT_THAT(Values<int64_t>((*out)[3][0]), ElementsAre(9));
}

TEST(BatchTest, RangeBy3DropsTheRemainder) {
  auto ds = Dataset::Range(10).Batch(3, {.drop_remainder = true});
  EXPECT_EQ(ds.Cardinality(), 3);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_THAT(Values<int64_t>((*out)[2][0]), ElementsAre(6, 7, 8));
  // An exact multiple keeps its last batch.
  auto exact = Collect(Dataset::Range(9).Batch(3, {.drop_remainder = true}));
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->size(), 3u);
}

TEST(BatchTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(0).Batch(3).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(2).Batch(3).Cardinality(), 1);
  EXPECT_EQ(Dataset::Range(2).Batch(3, {.drop_remainder = true}).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(64).Batch(32).Cardinality(), 2);
  EXPECT_EQ(Dataset::Range(65).Batch(32).Cardinality(), 3);
  // "Batch everything": (n + b - 1) / b overflowed (2 elements counted as infinite).
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Dataset::Range(2).Batch(kMax).Cardinality(), 1);
  EXPECT_EQ(Dataset::Range(10).Batch(kMax).Cardinality(), 1);
  EXPECT_EQ(Dataset::Range(10).Batch(kMax, {.drop_remainder = true}).Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(10).PaddedBatch(kMax).Cardinality(), 1);
}

// Buffered by a Prefetch, such a batch is saved as its sources and recomputed on restore, which
// checked its row count against batch_size + 1 (overflowing to INT64_MIN).
TEST(BatchTest, ABatchOfEverythingRestoresFromItsSources) {
  auto ds = Dataset::Range(10).Batch(std::numeric_limits<int64_t>::max()).Prefetch(1);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());  // the batch; the prefetch may hold the end after it
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto next = fresh->GetNext();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(next->has_value());
  // And one restored before its batch was taken recomputes all ten rows.
  auto early = ds.MakeIterator();
  ASSERT_TRUE(early->Initialize().ok());
  auto before = early->Save();
  ASSERT_TRUE(before.ok()) << before.status();
  auto again = ds.MakeIterator();
  ASSERT_TRUE(again->Restore(*before).ok());
  auto batch = again->GetNext();
  ASSERT_TRUE(batch.ok() && batch->has_value()) << batch.status();
  EXPECT_EQ((**batch)[0].num_elements(), 10);
}

TEST(BatchTest, MultiComponentElements) {
  auto out = Collect(ThreeComponents(5).Batch(2));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  const Element& b = (*out)[1];  // elements 2 and 3
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].dtype(), DType::kInt64);
  EXPECT_EQ(b[0].shape(), Shape({2}));
  EXPECT_THAT(Values<int64_t>(b[0]), ElementsAre(2, 3));
  EXPECT_EQ(b[1].dtype(), DType::kFloat32);
  EXPECT_EQ(b[1].shape(), Shape({2, 2}));
  auto f = b[1].flat<float>();
  EXPECT_THAT(std::vector<float>(f.begin(), f.end()), ElementsAre(2.0f, 2.5f, 3.0f, 3.5f));
  EXPECT_EQ(b[2].dtype(), DType::kBytes);
  EXPECT_EQ(b[2].shape(), Shape({2}));
  auto s = b[2].flat<std::string>();
  EXPECT_THAT(std::vector<std::string>(s.begin(), s.end()), ElementsAre("e2", "e3"));
  const Element& last = (*out)[2];
  EXPECT_EQ(last[1].shape(), Shape({1, 2}));
  EXPECT_EQ(last[2].flat<std::string>()[0], "e4");
}

TEST(BatchTest, EachComponentIsOneBufferFilledInPlace) {
  auto inputs = std::make_shared<std::vector<Element>>();
  auto ds = ThreeComponents(4)
                .Map([inputs](Element e) -> absl::StatusOr<Element> {
                  inputs->push_back(e);
                  return e;
                })
                .Batch(4);
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ(inputs->size(), 4u);
  const Element& b = (*out)[0];
  for (size_t k = 0; k < b.size(); ++k) {
    auto row0 = b[k].SubTensor(0);
    auto row3 = b[k].SubTensor(3);
    ASSERT_TRUE(row0.ok() && row3.ok());
    EXPECT_TRUE(row0->SharesBufferWith(*row3)) << "component " << k;
    EXPECT_TRUE(row0->SharesBufferWith(b[k])) << "component " << k;
    // Rows are laid out back to back in that one buffer.
    EXPECT_EQ(static_cast<const char*>(row3->raw_data()),
              static_cast<const char*>(b[k].raw_data()) +
                  3 * DTypeSize(b[k].dtype()) * row0->num_elements());
    // Not made of the elements' own buffers: copied, in place.
    for (const Element& in : *inputs) {
      EXPECT_FALSE(b[k].SharesBufferWith(in[k])) << "component " << k;
      EXPECT_FALSE(row0->SharesBufferWith(in[k])) << "component " << k;
    }
  }
  EXPECT_EQ(b[1].buffer()->size(), 4 * 2 * sizeof(float));
}

// Elements large enough that a batch splits into several copy tasks.
Dataset BigElements(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    std::vector<float> v(8192);
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(i * 10000 + j);
    return Element{e[0], Tensor::FromVector(v),
                   Tensor::Scalar<std::string>(std::string(static_cast<size_t>(i), 'x'))};
  });
}

class BatchParallelTest : public ::testing::TestWithParam<int> {};

// Elements (i, float32 [2] {i, i + 0.5}) whose floats are row row_of(i) of the [3, 2] buffer
// (*buffers)[i / 3].
using Buffers = std::map<int64_t, std::shared_ptr<Buffer>>;
Dataset RowsOfSharedBuffers(int64_t n, std::function<int64_t(int64_t)> row_of,
                            std::shared_ptr<Buffers> buffers) {
  auto mu = std::make_shared<std::mutex>();
  return Dataset::Range(n).Map(
      [row_of, buffers, mu](Element e) -> absl::StatusOr<Element> {
        const int64_t i = e[0].scalar<int64_t>();
        std::shared_ptr<Buffer> buffer;
        {
          std::lock_guard<std::mutex> l(*mu);
          auto& b = (*buffers)[i / 3];
          if (b == nullptr) b = Buffer::Allocate(3 * 2 * sizeof(float));
          buffer = b;
        }
        SLUICE_ASSIGN_OR_RETURN(Tensor t, Tensor::FromBuffer(DType::kFloat32, Shape{2}, buffer,
                                                             row_of(i) * 2 * sizeof(float)));
        t.data<float>()[0] = static_cast<float>(i);
        t.data<float>()[1] = static_cast<float>(i) + 0.5f;
        return Element{e[0], t};
      },
      {.num_parallel_calls = 2});
}

TEST(BatchTest, AdoptsTheBufferOfElementsAlreadyInPlace) {
  auto buffers = std::make_shared<Buffers>();
  auto out = Collect(RowsOfSharedBuffers(
                         6, [](int64_t i) { return i % 3; }, buffers)
                         .Batch(3));
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  for (int b = 0; b < 2; ++b) {
    const Tensor& floats = (*out)[b][1];
    ASSERT_EQ(floats.shape(), (Shape{3, 2}));
    EXPECT_EQ(floats.buffer(), (*buffers)[b]);  // Not copied.
    for (int64_t r = 0; r < 3; ++r) {
      EXPECT_EQ(floats.data<float>()[2 * r], static_cast<float>(3 * b + r));
      EXPECT_EQ(floats.data<float>()[2 * r + 1], static_cast<float>(3 * b + r) + 0.5f);
    }
    // The int64 component was not in place: copied into a buffer of its own.
    EXPECT_FALSE((*out)[b][0].SharesBufferWith(floats));
  }
}

TEST(BatchTest, CopiesRowsThatAreNotInPlace) {
  // Rows in reverse order within their buffer, or a batch of 2 from buffers of 3 rows.
  for (auto [row_of, batch] :
       {std::pair<std::function<int64_t(int64_t)>, int64_t>{[](int64_t i) { return 2 - i % 3; }, 3},
        {[](int64_t i) { return i % 3; }, 2}}) {
    auto buffers = std::make_shared<Buffers>();
    auto out = Collect(RowsOfSharedBuffers(6, row_of, buffers).Batch(batch));
    ASSERT_TRUE(out.ok()) << out.status();
    int64_t i = 0;
    for (const Element& b : *out) {
      EXPECT_EQ(b[1].buffer()->size(), static_cast<size_t>(batch) * 2 * sizeof(float));
      for (const auto& [key, buffer] : *buffers) EXPECT_NE(b[1].buffer(), buffer);
      for (int64_t r = 0; r < batch; ++r, ++i) {
        EXPECT_EQ(b[1].data<float>()[2 * r], static_cast<float>(i));
      }
    }
    EXPECT_EQ(i, 6);
  }
}

// Batches of BigElements(n).Batch(32) are 1 MiB of floats: big enough to be recycled.
TEST(BatchTest, ReusesTheMemoryOfDroppedBatchesOnly) {
  auto it = BigElements(32 * 6).Batch(32).MakeIterator();
  auto check = [](const Element& b, int64_t first) {
    for (int64_t r : {int64_t{0}, int64_t{31}}) {
      const float* row = b[1].data<float>() + r * 8192;
      EXPECT_EQ(row[0], static_cast<float>((first + r) * 10000));
      EXPECT_EQ(row[8191], static_cast<float>((first + r) * 10000 + 8191));
    }
  };
  auto b0 = it->GetNext();
  ASSERT_TRUE(b0.ok() && b0->has_value());
  ASSERT_EQ((**b0)[1].byte_size(), size_t{1} << 20);
  const void* first = (**b0)[1].raw_data();
  b0->reset();  // Dropped: its memory is free for the next batch.
  auto b1 = it->GetNext();
  ASSERT_TRUE(b1.ok() && b1->has_value());
  EXPECT_EQ((**b1)[1].raw_data(), first);
  check(**b1, 32);
  // Kept: the next batch gets other memory.
  auto b2 = it->GetNext();
  ASSERT_TRUE(b2.ok() && b2->has_value());
  EXPECT_NE((**b2)[1].raw_data(), (**b1)[1].raw_data());
  check(**b1, 32);
  check(**b2, 64);
  // A batch outliving its iterator keeps valid memory (ASan checks the reads).
  it.reset();
  check(**b2, 64);
}

TEST_P(BatchParallelTest, SameBatchesWhateverTheParallelism) {
  auto want = Collect(BigElements(37).Batch(8));
  auto got = Collect(BigElements(37).Batch(8, {.num_parallel_calls = GetParam()}));
  ASSERT_TRUE(want.ok() && got.ok()) << got.status();
  ASSERT_EQ(got->size(), 5u);
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_TRUE(ElementsEqual((*got)[i], (*want)[i])) << "batch " << i;
  }
  // Spot-check values rather than trusting the sequential path.
  EXPECT_EQ((*got)[4][1].shape(), Shape({5, 8192}));
  EXPECT_EQ((*got)[4][1].flat<float>()[8192 * 2 + 7], 34 * 10000 + 7);
  EXPECT_EQ((*got)[4][2].flat<std::string>()[1], std::string(33, 'x'));
}

TEST_P(BatchParallelTest, SmallElementsToo) {
  auto got = Collect(ThreeComponents(10).Batch(4, {.num_parallel_calls = GetParam()}));
  auto want = Collect(ThreeComponents(10).Batch(4));
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < got->size(); ++i) EXPECT_TRUE(ElementsEqual((*got)[i], (*want)[i]));
}

TEST_P(BatchParallelTest, ParallelismKnob) {
  auto it = Dataset::Range(4).Batch(2, {.num_parallel_calls = GetParam()}).MakeIterator();
  ASSERT_TRUE(Drain(*it).ok());
  auto stats = it->Stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[1].name, "Batch[1]");
  EXPECT_EQ(stats[1].elements_produced, 2);
  if (GetParam() == 1) {
    EXPECT_EQ(stats[1].parallelism, -1);  // no knob
  } else if (GetParam() == kAutotune) {
    EXPECT_GE(stats[1].parallelism, 1);
  } else {
    EXPECT_EQ(stats[1].parallelism, GetParam());
  }
}

TEST_P(BatchParallelTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(
      BigElements(13).Batch(4, {.num_parallel_calls = GetParam()}), {0, 1, 2, 3, 4});
}

INSTANTIATE_TEST_SUITE_P(Parallelism, BatchParallelTest, ::testing::Values(1, 2, 8, kAutotune));

// A parallel Batch schedules a copy task per extra chunk, then copies chunks itself; while the
// arena's workers are busy, it copies them all and the tasks stay queued. Each held the batch's
// rows and a view of its buffer until it ran: after the batch was returned, after the iterator
// was destroyed, and at exit, where LeakSanitizer reported it (CI,
// BatchParallelTest.CheckpointResumesExactly/-1; tests/lsan.supp hid it). The batch now lets go
// of its rows once made, and destroying the iterator waits for its tasks. Here the test holds
// both workers of the arena itself, so that the copy task is queued for certain.
TEST(BatchTest, QueuedCopyTasksHoldNoRowsAndDoNotOutliveTheIterator) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    int running = 0;  // blocking tasks started and not finished
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  IteratorContext ctx = TestContext(4);
  ctx.runtime = std::make_shared<Runtime>(2);
  for (int w = 0; w < 2; ++w) {
    ctx.runtime->Schedule([gate] {
      std::unique_lock<std::mutex> l(gate->mu);
      ++gate->running;
      gate->cv.notify_all();
      gate->cv.wait(l, [&] { return gate->open; });
      --gate->running;
      gate->cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> l(gate->mu);
    gate->cv.wait(l, [&] { return gate->running == 2; });  // both workers held
  }

  std::vector<std::weak_ptr<Buffer>> rows;  // written by the (sequential) Map on this thread
  Dataset ds = Dataset::Range(8)
                   .Map([&rows](Element) -> absl::StatusOr<Element> {
                     Tensor t(DType::kFloat32, Shape{16 << 10});  // 64 KB: worth a task
                     rows.push_back(t.buffer());
                     return Element{t};
                   })
                   .Batch(4, {.num_parallel_calls = 2});
  absl::StatusOr<std::unique_ptr<IteratorBase>> it = ds.base()->MakeIterator(ctx);
  ASSERT_TRUE(it.ok()) << it.status();
  absl::StatusOr<std::optional<Element>> batch = (*it)->GetNext();
  ASSERT_TRUE(batch.ok() && batch->has_value()) << batch.status();
  EXPECT_EQ((**batch)[0].shape(), (Shape{4, 16 << 10}));
  ASSERT_EQ(rows.size(), 4u);
  for (size_t k = 0; k < rows.size(); ++k) EXPECT_TRUE(rows[k].expired()) << "row " << k;
  std::weak_ptr<Buffer> out = (**batch)[0].buffer();
  batch->reset();
  EXPECT_TRUE(out.expired());  // no task holds a view of the batch

  // The copy task is still queued behind the held workers: destroying the iterator returns only
  // once they are let go and a worker has run it.
  std::atomic<bool> opened{false};
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    opened.store(true);
    std::lock_guard<std::mutex> l(gate->mu);
    gate->open = true;
    gate->cv.notify_all();
  });
  it->reset();
  EXPECT_TRUE(opened.load()) << "the iterator did not wait for its queued copy task";
  opener.join();
  std::unique_lock<std::mutex> l(gate->mu);
  gate->cv.wait(l, [&] { return gate->running == 0; });
}

TEST(BatchTest, EmptyInput) {
  auto out = Collect(Dataset::Range(0).Batch(3));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

TEST(BatchTest, EndOfSequenceRepeatsAtEveryPosition) {
  for (int64_t n : {0, 1, 2, 3, 4, 5, 6}) {
    for (bool drop : {false, true}) {
      auto it = Dataset::Range(n).Batch(3, {.drop_remainder = drop}).MakeIterator();
      auto got = Drain(*it);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(static_cast<int64_t>(got->size()), drop ? n / 3 : (n + 2) / 3) << n;
      for (int i = 0; i < 3; ++i) {
        auto e = it->GetNext();
        ASSERT_TRUE(e.ok());
        EXPECT_FALSE(e->has_value());
      }
    }
  }
}

TEST(BatchTest, ShapeMismatchNamesElementAndComponent) {
  auto ds = Dataset::Range(6)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  const int64_t i = e[0].scalar<int64_t>();
                  return Element{e[0], Tensor::Zeros(DType::kFloat32, Shape{i == 4 ? 3 : 2})};
                })
                .Batch(3);
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "Batch[2] at element 1: element 1 of the batch: component 1 has shape [3], expected "
            "[2] like the batch's first element");
  // Sticky in the user-facing iterator.
  EXPECT_EQ(it->GetNext().status(), got.status());
}

TEST(BatchTest, DTypeAndArityMismatch) {
  auto dtype = Collect(Dataset::Range(4)
                           .Map([](Element e) -> absl::StatusOr<Element> {
                             if (e[0].scalar<int64_t>() == 2) return Element{Tensor::Scalar(2.0f)};
                             return e;
                           })
                           .Batch(4));
  ASSERT_FALSE(dtype.ok());
  EXPECT_EQ(dtype.status().message(),
            "Batch[2] at element 0: element 2 of the batch: component 0 has dtype float32, "
            "expected int64 like the batch's first element");
  auto arity = Collect(Dataset::Range(4)
                           .Map([](Element e) -> absl::StatusOr<Element> {
                             if (e[0].scalar<int64_t>() == 3) e.push_back(e[0]);
                             return e;
                           })
                           .Batch(4));
  ASSERT_FALSE(arity.ok());
  EXPECT_EQ(arity.status().message(),
            "Batch[2] at element 0: element 3 of the batch has 2 components, expected 1 like the "
            "batch's first element");
}

TEST(BatchTest, InputErrorPassesThroughAndDropsThePartialBatch) {
  auto ds = Dataset::Range(10).Map([](Element e) { return FailAt(std::move(e), 4); }).Batch(3);
  auto it = ds.base()->MakeIterator(TestContext(4));
  ASSERT_TRUE(it.ok());
  auto b0 = (*it)->GetNext();
  ASSERT_TRUE(b0.ok() && b0->has_value());
  EXPECT_THAT(Values<int64_t>((**b0)[0]), ElementsAre(0, 1, 2));
  auto err = (*it)->GetNext();  // 3 was gathered, then 4 failed.
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message(), "Map[1] at element 4: bad");
  // Internal iterators go on after an error; 3 went with it.
  auto b1 = (*it)->GetNext();
  ASSERT_TRUE(b1.ok() && b1->has_value());
  EXPECT_THAT(Values<int64_t>((**b1)[0]), ElementsAre(5, 6, 7));
  auto b2 = (*it)->GetNext();
  ASSERT_TRUE(b2.ok() && b2->has_value());
  EXPECT_THAT(Values<int64_t>((**b2)[0]), ElementsAre(8, 9));
  auto end = (*it)->GetNext();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(BatchTest, ContinuesAfterAMismatchedBatch) {
  auto ds = Dataset::Range(6)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  if (e[0].scalar<int64_t>() == 1) e.push_back(e[0]);
                  return e;
                })
                .Batch(2);
  auto it = ds.base()->MakeIterator(TestContext(4));
  ASSERT_TRUE(it.ok());
  EXPECT_FALSE((*it)->GetNext().ok());
  auto next = (*it)->GetNext();
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_THAT(Values<int64_t>((**next)[0]), ElementsAre(2, 3));
}

TEST(BatchTest, InvalidArguments) {
  auto zero = Collect(Dataset::Range(3).Batch(0));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "Batch[1]: batch_size must be > 0, got 0");
  auto calls = Collect(Dataset::Range(3).Batch(2, {.num_parallel_calls = 0}));
  ASSERT_FALSE(calls.ok());
  EXPECT_EQ(calls.status().message(),
            "Batch[1]: num_parallel_calls must be >= 1 or AUTOTUNE (-1), got 0");
}

TEST(BatchTest, CheckpointResumesExactly) {
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Batch(3), {0, 1, 2, 3, 4});
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Batch(3, {.drop_remainder = true}),
                                          {0, 1, 2, 3});
  testing::ExpectCheckpointsResumeExactly(ThreeComponents(7).Batch(2), {0, 2, 4});
}

}  // namespace
}  // namespace sluice
