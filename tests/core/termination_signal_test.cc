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

TEST(TerminationSignalTest, OneWatchAtATimeAndThePreviousDispositionComesBack) {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before;
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &before), 0);
  {
    absl::StatusOr<std::unique_ptr<TerminationSignal>> watch = TerminationSignal::Install();
    ASSERT_TRUE(watch.ok()) << watch.status();
    EXPECT_EQ(TerminationSignal::Install().status().code(), absl::StatusCode::kFailedPrecondition);
    struct sigaction during;
    ASSERT_EQ(sigaction(SIGTERM, nullptr, &during), 0);
    EXPECT_NE(during.sa_handler, SIG_IGN);
  }
  struct sigaction after;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
  // A new watch starts with no signal noted.
  absl::StatusOr<std::unique_ptr<TerminationSignal>> again = TerminationSignal::Install();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE((*again)->received());
  again->reset();
  ASSERT_EQ(sigaction(SIGTERM, &before, nullptr), 0);
}

// Release gives the previous disposition back before it looks, so a SIGTERM is either counted by
// it or gets that disposition: none is noted after the look and lost.
TEST(TerminationSignalTest, ReleaseCountsASigtermBeforeItAndTheNextGetsThePreviousDisposition) {
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction before;
  ASSERT_EQ(sigaction(SIGTERM, &ignore, &before), 0);
  {
    absl::StatusOr<std::unique_ptr<TerminationSignal>> watch = TerminationSignal::Install();
    ASSERT_TRUE(watch.ok()) << watch.status();
    EXPECT_FALSE((*watch)->Release());
    struct sigaction after;
    ASSERT_EQ(sigaction(SIGTERM, nullptr, &after), 0);
    EXPECT_EQ(after.sa_handler, SIG_IGN);
    // Released, it no longer holds the one watch a process may have.
    absl::StatusOr<std::unique_ptr<TerminationSignal>> next = TerminationSignal::Install();
    ASSERT_TRUE(next.ok()) << next.status();
    ASSERT_EQ(raise(SIGTERM), 0);
    EXPECT_TRUE((*next)->Release());
    EXPECT_TRUE((*next)->Release());  // again: the same answer, nothing restored twice
  }  // the released watches' destructors leave the disposition alone
  struct sigaction after;
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, SIG_IGN);
  ASSERT_EQ(sigaction(SIGTERM, &before, nullptr), 0);
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
