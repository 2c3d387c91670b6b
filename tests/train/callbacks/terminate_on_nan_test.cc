// TerminateOnNaN (train/callbacks/terminate_on_nan.h): Fit ends at the step whose loss is NaN.
#include "train/callbacks/terminate_on_nan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/train/fit_test_util.h"
#include "train/fit/trainer.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::callbacks {
namespace {

using ::sluice::train::testing::Blobs;
using ::sluice::train::testing::TinyModel;

// 96 points in batches of 16: point 40 (in batch 2, the 3rd step) is NaN.
Dataset WithANaNAtStep3() {
  Element blobs = Blobs(96, 3);
  blobs[0].data<float>()[40 * 4] = std::numeric_limits<float>::quiet_NaN();
  return Dataset::FromTensorSlices(blobs).Batch(16);
}

TEST(TerminateOnNaNTest, StopsFitAtTheStepWhoseLossIsNaN) {
  auto model = TinyModel(5);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  TerminateOnNaN terminate(nullptr);
  absl::StatusOr<fit::History> h =
      trainer.Fit(WithANaNAtStep3(), {.epochs = 3, .callbacks = {&terminate}, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();  // as Keras: the history so far, no error
  EXPECT_EQ(terminate.terminated_at_step(), 3);
  EXPECT_EQ(trainer.global_step(), 3);
  ASSERT_EQ(h->epochs.size(), 1u);
  EXPECT_TRUE(std::isnan(h->history.at("loss")[0]));

  // Without it, the NaN trains on to the end: the loss stays NaN.
  auto other = TinyModel(5);
  fit::Trainer on(*other, sgd);
  h = on.Fit(WithANaNAtStep3(), {.epochs = 3, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(on.global_step(), 18);
  EXPECT_TRUE(std::isnan(h->history.at("loss")[2]));
}

// Action::kFail: Fit fails naming the step, and a callback after it in the list (a backup every
// step) never sees that step.
TEST(TerminateOnNaNTest, FailActionFailsFitBeforeLaterCallbacksSeeTheStep) {
  auto model = TinyModel(5);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  TerminateOnNaN terminate(nullptr, TerminateOnNaN::Action::kFail);
  struct LastStepSeen : Callback {
    absl::Status OnBatchEnd(int64_t, const Logs&) override {
      step = trainer()->global_step();
      return absl::OkStatus();
    }
    int64_t step = 0;
  } after;
  absl::StatusOr<fit::History> h = trainer.Fit(
      WithANaNAtStep3(), {.epochs = 3, .callbacks = {&terminate, &after}, .verbose = 0});
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(h.status().message(),
              ::testing::HasSubstr("the loss is NaN after global step 3 (epoch 1, batch 3)"));
  EXPECT_EQ(terminate.terminated_at_step(), 3);
  EXPECT_EQ(after.step, 2);
}

TEST(TerminateOnNaNTest, AFiniteLossTrainsToTheEnd) {
  auto model = TinyModel(5);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  TerminateOnNaN terminate(nullptr);
  absl::StatusOr<fit::History> h = trainer.Fit(
      testing::BlobsDataset(96, 3, 16), {.epochs = 2, .callbacks = {&terminate}, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(terminate.terminated_at_step(), std::nullopt);
  EXPECT_EQ(trainer.global_step(), 12);
}

}  // namespace
}  // namespace sluice::train::callbacks
