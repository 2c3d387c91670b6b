#include "train/backend/cpu/cpu_threads.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/runtime.h"

namespace sluice::train::backend::cpu {
namespace {

TEST(CpuThreadsTest, DefaultIsEveryCore) {
  SetCpuThreads(0);
  EXPECT_EQ(CpuThreads(), AvailableCores());
  SetCpuThreads(3);
  EXPECT_EQ(CpuThreads(), 3);
  SetCpuThreads(0);
}

TEST(CpuThreadsTest, ParallelForCoversTheRangeOnce) {
  for (int threads : {1, 2, 4}) {
    SetCpuThreads(threads);
    for (int64_t n : {0, 1, 7, 100, 1000, 100003}) {
      std::vector<int> count(n, 0);
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      ParallelFor(n, 100, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++count[i];
        std::lock_guard<std::mutex> lock(mu);
        chunks.emplace_back(b, e);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(count[i], 1) << n << " " << i;
      // Small ranges stay whole; big ones are split into one chunk per thread.
      const size_t want = n < 200 ? (n > 0 ? 1 : 0) : std::min<int64_t>(threads, n / 100);
      EXPECT_EQ(chunks.size(), want) << "n " << n << " threads " << threads;
    }
  }
  SetCpuThreads(0);
}

TEST(CpuThreadsTest, OpenMpTeamFollowsTheSetting) {
  if (OpenMpThreads() == 0) GTEST_SKIP() << "oneDNN here is not built on OpenMP";
  SetCpuThreads(3);
  ApplyCpuThreadsToOpenMp();
  EXPECT_EQ(OpenMpThreads(), 3);
  // Per thread: a new thread applies it too.
  int other = 0;
  std::thread t([&] {
    ApplyCpuThreadsToOpenMp();
    other = OpenMpThreads();
  });
  t.join();
  EXPECT_EQ(other, 3);
  SetCpuThreads(1);
  ApplyCpuThreadsToOpenMp();
  EXPECT_EQ(OpenMpThreads(), 1);
  SetCpuThreads(0);
}

TEST(CpuThreadsTest, OneOpenMpThreadLastsItsScope) {
  if (OpenMpThreads() == 0) GTEST_SKIP() << "oneDNN here is not built on OpenMP";
  SetCpuThreads(3);
  ApplyCpuThreadsToOpenMp();  // as every kernel does first
  {
    OneOpenMpThread large(/*small=*/false);  // a kernel big enough for the team
    EXPECT_EQ(OpenMpThreads(), 3);
  }
  EXPECT_EQ(OpenMpThreads(), 3);
  {
    OneOpenMpThread one;
    EXPECT_EQ(OpenMpThreads(), 1);
    {
      OneOpenMpThread nested;  // a small reorder inside a small matmul
      EXPECT_EQ(OpenMpThreads(), 1);
    }
    EXPECT_EQ(OpenMpThreads(), 1);
  }
  EXPECT_EQ(OpenMpThreads(), 3);
  SetCpuThreads(0);
}

}  // namespace
}  // namespace sluice::train::backend::cpu

namespace sluice::train::backend::cpu {
namespace {

TEST(CpuThreadsTest, ProgramsLinkingTheBackendRunWithPassiveOpenMpWaiting) {
  // The backend's .preinit_array entry re-executes a program started without a policy with
  // OMP_WAIT_POLICY=passive, before libgomp reads it; a policy the caller chose is kept.
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  ASSERT_NE(policy, nullptr) << "started without OMP_WAIT_POLICY and not re-executed with it";
  if (std::string(policy) != "passive") GTEST_SKIP() << "the caller chose " << policy;
  EXPECT_STREQ(policy, "passive");
}

}  // namespace
}  // namespace sluice::train::backend::cpu
