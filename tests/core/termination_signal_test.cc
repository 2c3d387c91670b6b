// TerminationSignal (core/termination_signal.h): the first SIGTERM is noted, not fatal; the second
// gets the process's previous disposition; one watch at a time; the previous disposition back
// afterwards.
#include "core/termination_signal.h"

#include <signal.h>

#include <memory>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(TerminationSignalTest, TheFirstSigtermIsNotedAndTheProcessGoesOn) {
  absl::StatusOr<std::unique_ptr<TerminationSignal>> watch = TerminationSignal::Install();
  ASSERT_TRUE(watch.ok()) << watch.status();
  EXPECT_FALSE((*watch)->received());
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_TRUE((*watch)->received());
}

TEST(TerminationSignalTest, TheSecondSigtermEndsTheProcess) {
  EXPECT_EXIT(
      {
        auto watch = TerminationSignal::Install();
        if (!watch.ok()) _exit(3);
        raise(SIGTERM);
        if (!(*watch)->received()) _exit(4);
        raise(SIGTERM);
        _exit(5);  // not reached: the default disposition ends the process
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

// The process ignores SIGTERM while each test runs: a disposition a watch must give back.
class IgnoringSigterm : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    ASSERT_EQ(sigaction(SIGTERM, &ignore, &before_), 0);
  }
  void TearDown() override { ASSERT_EQ(sigaction(SIGTERM, &before_, nullptr), 0); }
  static bool Ignored() {
    struct sigaction now;
    return sigaction(SIGTERM, nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
  }

 private:
  struct sigaction before_;
};

TEST_F(IgnoringSigterm, OneWatchAtATimeAndThePreviousDispositionComesBack) {
  {
    absl::StatusOr<std::unique_ptr<TerminationSignal>> watch = TerminationSignal::Install();
    ASSERT_TRUE(watch.ok()) << watch.status();
    EXPECT_EQ(TerminationSignal::Install().status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(Ignored());
  }
  EXPECT_TRUE(Ignored());
  // A new watch starts with no signal noted.
  absl::StatusOr<std::unique_ptr<TerminationSignal>> again = TerminationSignal::Install();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE((*again)->received());
  again->reset();
}

// Release gives the previous disposition back before it looks, so a SIGTERM is either counted by
// it or gets that disposition: none is noted after the look and lost.
TEST_F(IgnoringSigterm, ReleaseCountsASigtermBeforeItAndTheNextGetsThePreviousDisposition) {
  {
    absl::StatusOr<std::unique_ptr<TerminationSignal>> watch = TerminationSignal::Install();
    ASSERT_TRUE(watch.ok()) << watch.status();
    EXPECT_FALSE((*watch)->Release());
    EXPECT_TRUE(Ignored());
    // Released, it no longer holds the one watch a process may have.
    absl::StatusOr<std::unique_ptr<TerminationSignal>> next = TerminationSignal::Install();
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_EQ(raise(SIGTERM), 0);
    EXPECT_TRUE((*next)->Release());
    EXPECT_TRUE((*next)->Release());  // again: the same answer, nothing restored twice
  }  // the released watches' destructors leave the disposition alone
  EXPECT_TRUE(Ignored());
}

// A SIGTERM the previous watch noted after its owner's last look carries over to a watch that
// asks for it (sluice train's test evaluation after Fit's last backup), and the next SIGTERM
// then ends the process: only one is ever let through.
TEST(TerminationSignalTest, AnUnreadSigtermCarriesOverAndTheNextOneEndsTheProcess) {
  EXPECT_EXIT(
      {
        {
          auto fit = TerminationSignal::Install();
          if (!fit.ok()) _exit(3);
          raise(SIGTERM);
        }
        {
          auto fresh = TerminationSignal::Install();
          if (!fresh.ok() || (*fresh)->received()) _exit(4);  // a plain watch starts clean
          raise(SIGTERM);
        }
        auto after_fit = TerminationSignal::Install(/*keep_received=*/true);
        if (!after_fit.ok() || !(*after_fit)->received()) _exit(5);
        raise(SIGTERM);
        _exit(6);  // not reached: that SIGTERM was the second
      },
      ::testing::KilledBySignal(SIGTERM), "");
}

}  // namespace
}  // namespace sluice
