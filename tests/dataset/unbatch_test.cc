#include <memory>
#include <string>
#include <vector>

#include "dataset/dataset_base.h"
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

// Element i: int64 [i % 4] holding 10 i + k, and bytes [i % 4] "<i>.<k>".
Dataset RaggedPairs(int64_t n) {
  return Dataset::Range(n).Map([](Element e) -> absl::StatusOr<Element> {
    const int64_t i = e[0].scalar<int64_t>();
    std::vector<int64_t> v;
    std::vector<std::string> s;
    for (int64_t k = 0; k < i % 4; ++k) {
      v.push_back(10 * i + k);
      s.push_back(std::to_string(i) + "." + std::to_string(k));
    }
    return Element{Tensor::FromVector(v), Tensor::FromVector(s)};
  });
}

TEST(UnbatchTest, UndoesBatch) {
  auto ds = Dataset::Range(10).Batch(3).Unbatch();
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Ints(*out), Iota(0, 10));
  for (const Element& e : *out) EXPECT_EQ(e[0].shape(), Shape({}));
}

TEST(UnbatchTest, SplitsEveryComponentAndSkipsEmptyBatches) {
  auto out = Collect(RaggedPairs(6).Unbatch());  // 0 + 1 + 2 + 3 + 0 + 1 rows
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Ints(*out), ElementsAre(10, 20, 21, 30, 31, 32, 50));
  std::vector<std::string> names;
  for (const Element& e : *out) {
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[1].shape(), Shape({}));
    names.push_back(e[1].scalar<std::string>());
  }
  EXPECT_THAT(names, ElementsAre("1.0", "2.0", "2.1", "3.0", "3.1", "3.2", "5.0"));
}

TEST(UnbatchTest, RowsAreViewsOfTheInput) {
  auto batches = std::make_shared<std::vector<Element>>();
  auto ds = Dataset::Range(6)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  const float f = static_cast<float>(e[0].scalar<int64_t>());
                  return Element{e[0], Tensor::FromVector<float>({f, -f})};
                })
                .Batch(3)
                .Map([batches](Element e) -> absl::StatusOr<Element> {
                  batches->push_back(e);
                  return e;
                })
                .Unbatch();
  auto out = Collect(ds);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 6u);
  ASSERT_EQ(batches->size(), 2u);
  for (size_t i = 0; i < out->size(); ++i) {
    const Element& batch = (*batches)[i / 3];
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_TRUE((*out)[i][k].SharesBufferWith(batch[k])) << i << " " << k;
    }
    EXPECT_EQ((*out)[i][1].shape(), Shape({2}));
    EXPECT_EQ((*out)[i][1].flat<float>()[1], -static_cast<float>(i));
  }
}

TEST(UnbatchTest, Cardinality) {
  EXPECT_EQ(Dataset::Range(0).Batch(2).Unbatch().Cardinality(), 0);
  EXPECT_EQ(Dataset::Range(5).Batch(2).Unbatch().Cardinality(), kUnknownCardinality);
}

TEST(UnbatchTest, EmptyInputAndEndOfSequence) {
  auto empty = Collect(Dataset::Range(0).Batch(2).Unbatch());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  for (int64_t n : {1, 2, 3, 4, 5}) {
    auto it = RaggedPairs(n).Unbatch().MakeIterator();
    ASSERT_TRUE(Drain(*it).ok());
    for (int i = 0; i < 2; ++i) {
      auto e = it->GetNext();
      ASSERT_TRUE(e.ok());
      EXPECT_FALSE(e->has_value());
    }
  }
}

TEST(UnbatchTest, ComponentsMustAgreeOnTheFirstDimension) {
  auto ds = Dataset::Range(4)
                .Map([](Element e) -> absl::StatusOr<Element> {
                  const int64_t i = e[0].scalar<int64_t>();
                  return Element{Tensor::Zeros(DType::kInt64, Shape{2}),
                                 Tensor::Zeros(DType::kFloat32, Shape{i == 2 ? 3 : 2, 5})};
                })
                .Unbatch();
  auto it = ds.MakeIterator();
  auto got = Drain(*it);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "Unbatch[2] at element 4: input element 2: component 1 has shape [3, 5] but component "
            "0 has [2]: components must agree on the first dimension");
  EXPECT_EQ(it->GetNext().status(), got.status());  // sticky for the user
  // Internal iterators go on with the next input element.
  IteratorContext ctx;
  ctx.runtime = std::make_shared<Runtime>(2);
  ctx.cancellation = std::make_shared<CancellationManager>();
  ctx.stats = std::make_shared<StatsRegistry>();
  auto base = ds.base()->MakeIterator(ctx);
  ASSERT_TRUE(base.ok());
  int ok = 0, errors = 0;
  while (true) {
    auto e = (*base)->GetNext();
    if (!e.ok()) {
      ++errors;
      continue;
    }
    if (!e->has_value()) break;
    ++ok;
  }
  EXPECT_EQ(ok, 6);
  EXPECT_EQ(errors, 1);
}

TEST(UnbatchTest, ScalarsCannotBeUnbatched) {
  auto got = Collect(Dataset::Range(3).Unbatch());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "Unbatch[1] at element 0: input element 0: component 0 is a scalar, it has no first "
            "dimension to unbatch");
}

TEST(UnbatchTest, InputErrorsPassThrough) {
  auto got = Collect(Dataset::Range(6)
                         .Map([](Element e) -> absl::StatusOr<Element> {
                           if (e[0].scalar<int64_t>() == 4) return absl::DataLossError("bad");
                           return e;
                         })
                         .Batch(2)
                         .Unbatch());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(), "Map[1] at element 4: bad");
}

TEST(UnbatchTest, CheckpointResumesExactly) {
  // Mid-element positions save the rest of the element being split.
  testing::ExpectCheckpointsResumeExactly(Dataset::Range(10).Batch(4).Unbatch(),
                                          {0, 1, 3, 4, 5, 9, 10});
  testing::ExpectCheckpointsResumeExactly(RaggedPairs(9).Unbatch(), {0, 1, 2, 4, 7, 11});
}

}  // namespace
}  // namespace sluice
