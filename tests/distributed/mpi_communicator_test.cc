#include "distributed/mpi_communicator.h"

#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/distributed/test_communicator.h"
#include "tests/train/backend/guarded_backend.h"
#include "train/backend/transfer.h"

namespace sluice::distributed {
namespace {

using ::sluice::distributed::testing::TestComm;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<float> Floats(const Tensor& t) {
  absl::StatusOr<Tensor> host = train::backend::ToHost(t);
  EXPECT_TRUE(host.ok());
  return std::vector<float>(host->flat<float>().begin(), host->flat<float>().end());
}

TEST(MpiCommunicatorTest, RankAndSize) {
  MpiCommunicator& comm = TestComm();
  EXPECT_GE(comm.rank(), 0);
  EXPECT_LT(comm.rank(), comm.size());
  EXPECT_THAT(comm.Describe(), HasSubstr(absl::StrCat("rank ", comm.rank(), " of ", comm.size())));
  // A second communicator would initialise MPI twice.
  EXPECT_EQ(MpiCommunicator::Create().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(MpiCommunicatorTest, AllReduceEveryOp) {
  MpiCommunicator& comm = TestComm();
  const int n = comm.size();
  const float r = static_cast<float>(comm.rank());
  // Rank r holds {r + 1, -(r + 1), 10 r}.
  auto make = [&] { return Tensor::FromVector<float>({r + 1, -(r + 1), 10 * r}); };
  const float sum1 = n * (n + 1) / 2.0f;
  const float sum10 = 10.0f * n * (n - 1) / 2.0f;

  Tensor sum = make();
  ASSERT_TRUE(comm.AllReduce({sum}, ReduceOp::kSum).ok());
  EXPECT_THAT(Floats(sum), ElementsAreArray({sum1, -sum1, sum10}));
  Tensor mean = make();
  ASSERT_TRUE(comm.AllReduce({mean}, ReduceOp::kMean).ok());
  EXPECT_THAT(Floats(mean), ElementsAreArray({sum1 / n, -sum1 / n, sum10 / n}));
  Tensor lo = make();
  ASSERT_TRUE(comm.AllReduce({lo}, ReduceOp::kMin).ok());
  EXPECT_THAT(Floats(lo), ElementsAreArray({1.0f, -static_cast<float>(n), 0.0f}));
  Tensor hi = make();
  ASSERT_TRUE(comm.AllReduce({hi}, ReduceOp::kMax).ok());
  EXPECT_THAT(Floats(hi), ElementsAreArray({static_cast<float>(n), -1.0f, 10.0f * (n - 1)}));

  Tensor ints = Tensor::FromVector<int64_t>({comm.rank(), 1});
  ASSERT_TRUE(comm.AllReduce({ints}, ReduceOp::kSum).ok());
  EXPECT_EQ(ints.flat<int64_t>()[0], n * (n - 1) / 2);
  EXPECT_EQ(ints.flat<int64_t>()[1], n);
}

TEST(MpiCommunicatorTest, SeveralTensorsArePackedAndUnpacked) {
  MpiCommunicator& comm = TestComm();
  const int n = comm.size();
  Tensor a = Tensor::FromVector<float>({1, 2, 3});
  Tensor b(DType::kFloat32, Shape{2, 2});
  for (int i = 0; i < 4; ++i) b.flat<float>()[i] = static_cast<float>(comm.rank() * 4 + i);
  Tensor c = Tensor::FromVector<float>({static_cast<float>(comm.rank())});
  // Large enough to be reduced in its own memory beside the packed ones.
  Tensor d = Tensor::FromVector<float>(std::vector<float>(100000, 1.0f + comm.rank()));
  ASSERT_TRUE(comm.AllReduce({a, d, b, c}, ReduceOp::kSum).ok());
  EXPECT_EQ(d.flat<float>()[0], n * (n + 1) / 2.0f);
  EXPECT_EQ(d.flat<float>()[99999], n * (n + 1) / 2.0f);
  EXPECT_THAT(Floats(a), ElementsAreArray({1.0f * n, 2.0f * n, 3.0f * n}));
  for (int i = 0; i < 4; ++i) {
    // sum over ranks of (4 r + i)
    EXPECT_EQ(b.flat<float>()[i], 4.0f * n * (n - 1) / 2 + i * n) << i;
  }
  EXPECT_EQ(c.flat<float>()[0], n * (n - 1) / 2.0f);
}

// A job of 2 ranks runs libnbc's ring all-reduce (set before MPI_Init when the
// user did not set it), and a large in-place all-reduce sums exactly, every segment of the ring
// included: a count that does not divide by the ranks leaves a short one.
TEST(MpiCommunicatorTest, TwoRanksUseTheRingAndItSumsEverySegment) {
  MpiCommunicator& comm = TestComm();
  const int n = comm.size();
  const char* algorithm = std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
  if (n == 2) {
    ASSERT_NE(algorithm, nullptr);
    EXPECT_STREQ(algorithm, "1");
  }
  const int64_t count = 3 * 1000003 + 1;
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(i % 1000 + comm.rank());
  Tensor t = Tensor::FromVector<float>(values);
  ASSERT_TRUE(comm.AllReduce({t}, ReduceOp::kSum).ok());
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    wrong += t.flat<float>()[i] != static_cast<float>(n * (i % 1000) + n * (n - 1) / 2);
  }
  EXPECT_EQ(wrong, 0);
}

TEST(MpiCommunicatorTest, StartedCollectivesFinishInOrderWhileTheCallerGoesOn) {
  MpiCommunicator& comm = TestComm();
  std::vector<Tensor> tensors;
  std::vector<PendingCollective> pending;
  for (int k = 0; k < 8; ++k) {
    tensors.push_back(Tensor::FromVector<float>(std::vector<float>(1000, k + comm.rank())));
    absl::StatusOr<PendingCollective> p = comm.StartAllReduce({tensors.back()}, ReduceOp::kMean);
    ASSERT_TRUE(p.ok()) << p.status();
    pending.push_back(std::move(*p));
  }
  for (int k = 7; k >= 0; --k) ASSERT_TRUE(pending[k].Wait().ok());
  const float mean_rank = (comm.size() - 1) / 2.0f;
  for (int k = 0; k < 8; ++k) {
    EXPECT_FLOAT_EQ(tensors[k].flat<float>()[999], k + mean_rank) << k;
  }
}

TEST(MpiCommunicatorTest, BroadcastFromTheLastRank) {
  MpiCommunicator& comm = TestComm();
  const int root = comm.size() - 1;
  Tensor t = Tensor::FromVector<float>({static_cast<float>(comm.rank()), 5});
  Tensor u = Tensor::FromVector<int32_t>({comm.rank() * 7});
  ASSERT_TRUE(comm.Broadcast({t, u}, root).ok());
  EXPECT_THAT(Floats(t), ElementsAreArray({static_cast<float>(root), 5.0f}));
  EXPECT_EQ(u.flat<int32_t>()[0], root * 7);
  EXPECT_EQ(comm.Broadcast({t}, comm.size()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(MpiCommunicatorTest, AllGatherStacksAndGathersBytesOfAnyLength) {
  MpiCommunicator& comm = TestComm();
  Tensor t = Tensor::FromVector<int64_t>({comm.rank(), comm.rank() * 10});
  absl::StatusOr<Tensor> all = comm.AllGather(t);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->shape(), (Shape{comm.size(), 2}));
  for (int r = 0; r < comm.size(); ++r) {
    EXPECT_EQ(all->flat<int64_t>()[2 * r], r);
    EXPECT_EQ(all->flat<int64_t>()[2 * r + 1], 10 * r);
  }
  absl::StatusOr<std::vector<std::string>> bytes =
      comm.AllGatherBytes(std::string(comm.rank() * 1000, static_cast<char>('a' + comm.rank())));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->size(), static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) {
    EXPECT_EQ((*bytes)[r], std::string(r * 1000, static_cast<char>('a' + r)));
  }
  EXPECT_TRUE(comm.Barrier().ok());
}

TEST(MpiCommunicatorTest, HostValues) {
  MpiCommunicator& comm = TestComm();
  std::vector<double> d = {0.5, static_cast<double>(comm.rank())};
  ASSERT_TRUE(comm.AllReduceValues(absl::MakeSpan(d), ReduceOp::kMean).ok());
  EXPECT_DOUBLE_EQ(d[0], 0.5);
  EXPECT_DOUBLE_EQ(d[1], (comm.size() - 1) / 2.0);
  std::vector<int64_t> i = {comm.rank()};
  ASSERT_TRUE(comm.AllReduceValues(absl::MakeSpan(i), ReduceOp::kMax).ok());
  EXPECT_EQ(i[0], comm.size() - 1);
  EXPECT_EQ(comm.AllReduceValues(absl::MakeSpan(i), ReduceOp::kMean).code(),
            absl::StatusCode::kInvalidArgument);
}

// Argument errors are found before any message leaves, the same on every rank: nobody waits.
TEST(MpiCommunicatorTest, BadArgumentsFailOnEveryRankWithoutACollective) {
  MpiCommunicator& comm = TestComm();
  const int64_t before = comm.collectives();
  absl::Status mixed = comm.AllReduce(
      {Tensor::FromVector<float>({1}), Tensor::FromVector<int64_t>({1})}, ReduceOp::kSum);
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mixed.message(), HasSubstr("share a dtype"));
  EXPECT_EQ(comm.AllReduce({Tensor::FromVector<int64_t>({1})}, ReduceOp::kMean).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.AllReduce({Tensor::FromVector<uint8_t>({1})}, ReduceOp::kSum).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm.collectives(), before);
  EXPECT_TRUE(comm.Barrier().ok());  // still in step
}

// Tensors off the host go through the backend's copies (the guarded device checks that nothing
// reads its memory directly).
TEST(MpiCommunicatorTest, DeviceTensorsAreReducedThroughTheBackend) {
  MpiCommunicator& comm = TestComm();
  train::testing::RegisterGuardedBackend();
  absl::StatusOr<Tensor> t = train::backend::CopyTo(
      Tensor::FromVector<float>({1.0f, static_cast<float>(comm.rank())}), Device::Guarded());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(comm.AllReduce({*t}, ReduceOp::kSum).ok());
  EXPECT_EQ(t->device(), Device::Guarded());
  const int n = comm.size();
  EXPECT_THAT(Floats(*t), ElementsAreArray({1.0f * n, n * (n - 1) / 2.0f}));
  ASSERT_TRUE(comm.Broadcast({*t}, 0).ok());
  absl::StatusOr<Tensor> all = comm.AllGather(*t);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->device(), Device::Guarded());
  EXPECT_EQ(all->shape(), (Shape{n, 2}));
}

}  // namespace
}  // namespace sluice::distributed
