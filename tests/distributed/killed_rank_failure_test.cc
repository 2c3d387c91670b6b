// Run by killed_rank_test.sh only (mpirun --enable-recovery -np 2, a 5 s collective timeout):
// rank 1 dies of SIGKILL in the middle of an epoch; rank 0's Fit must fail within the timeout
// with an error that names rank 1. Rank 0 writes what it saw to $SLUICE_TEST_KILL_RESULT.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "tests/distributed/test_communicator.h"
#include "tests/train/fit_test_util.h"
#include "train/fit/trainer.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::fit {
namespace {

TEST(DistributedFailureTest, AKilledRankIsNamedWithinTheTimeout) {
  const char* result_path = std::getenv("SLUICE_TEST_KILL_RESULT");
  if (result_path == nullptr) GTEST_SKIP() << "run by tests/distributed/killed_rank_test.sh";
  distributed::MpiCommunicator& comm = distributed::testing::TestComm();
  ASSERT_EQ(comm.size(), 2);
  std::unique_ptr<layers::Sequential> model = testing::TinyModel(1);
  optimizers::Sgd sgd({.learning_rate = 0.1f});
  Trainer t(*model, sgd, {.communicator = &comm});
  testing::RecordingCallback killer;
  killer.on_batch_end = [&](int64_t batch, const callbacks::Logs&) {
    if (comm.rank() == 1 && batch == 3) raise(SIGKILL);
    return absl::OkStatus();
  };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<History> h = t.Fit(Dataset::FromTensorSlices(testing::Blobs(400, 1)).Batch(4),
                                    {.epochs = 1, .callbacks = {&killer}, .verbose = 0});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(h.ok());
  std::ofstream(result_path) << "seconds " << seconds << "\n" << h.status().ToString() << "\n";
}

// Run by killed_rank_test.sh with SLUICE_TEST_ABORT set: rank 1 calls Abort on its main thread
// while an all-reduce that rank 0 never joins is in flight on the communicator's thread (MPI runs
// FUNNELED: the worker must make the MPI_Abort call). Every rank ends, with the exit code.
TEST(DistributedFailureTest, AbortDuringACollectiveEndsEveryRank) {
  if (std::getenv("SLUICE_TEST_ABORT") == nullptr) {
    GTEST_SKIP() << "run by tests/distributed/killed_rank_test.sh";
  }
  distributed::MpiCommunicator& comm = distributed::testing::TestComm();
  ASSERT_EQ(comm.size(), 2);
  if (comm.rank() == 0) {
    std::this_thread::sleep_for(std::chrono::seconds(120));  // ended by rank 1's abort
    FAIL() << "rank 0 outlived rank 1's abort";
  }
  absl::StatusOr<distributed::PendingCollective> pending =
      comm.StartAllReduce({Tensor::FromVector<float>({1, 2})}, distributed::ReduceOp::kSum);
  ASSERT_TRUE(pending.ok()) << pending.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the worker polls it
  comm.Abort(7);
}

}  // namespace
}  // namespace sluice::train::fit
