// ReduceLROnPlateau (train/reduce_lr_on_plateau.h): Keras' rule, through Optimizer's rate.
#include "train/callbacks/reduce_lr_on_plateau.h"

#include <gtest/gtest.h>

#include "tests/train/fit_test_util.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::callbacks {
namespace {

using ::sluice::train::testing::BlobsDataset;
using ::sluice::train::testing::TinyModel;

TEST(ReduceLROnPlateauTest, LowersTheRateAfterPatienceDownToMinLr) {
  auto model = TinyModel(1);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  fit::Trainer trainer(*model, sgd);
  ReduceLROnPlateau cb({.monitor = "loss", .factor = 0.5, .patience = 2, .min_lr = 0.02});
  cb.set_trainer(&trainer);
  ASSERT_TRUE(cb.OnTrainBegin({}).ok());
  std::vector<float> rates;
  for (double loss : {1.0, 1.0, 1.0, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1}) {
    ASSERT_TRUE(cb.OnEpochEnd(0, {{"loss", loss}}).ok());
    rates.push_back(sgd.learning_rate());
  }
  // Epoch 2: 2 epochs without improvement: 0.05. Epoch 3 improves; epochs 5, 7 reduce to
  // 0.025 then 0.02 (min_lr), and it stays there.
  EXPECT_EQ(rates, (std::vector<float>{0.1f, 0.1f, 0.05f, 0.05f, 0.05f, 0.025f, 0.025f, 0.02f,
                                       0.02f, 0.02f}));
  EXPECT_EQ(cb.reductions(), 3);
}

TEST(ReduceLROnPlateauTest, CooldownWaitsBeforeCountingAgain) {
  auto model = TinyModel(1);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 1.0f});
  fit::Trainer trainer(*model, sgd);
  ReduceLROnPlateau cb({.monitor = "loss", .factor = 0.5, .patience = 1, .cooldown = 2});
  cb.set_trainer(&trainer);
  ASSERT_TRUE(cb.OnTrainBegin({}).ok());
  std::vector<float> rates;
  for (int epoch = 0; epoch < 6; ++epoch) {
    ASSERT_TRUE(cb.OnEpochEnd(epoch, {{"loss", 1.0}}).ok());
    rates.push_back(sgd.learning_rate());
  }
  // Keras' sequence: reduced at epoch 1; epoch 2 counts the cooldown down to 1, epoch 3 to 0 and
  // then counts toward patience, so the rate falls again at 3 and, after one more cooldown
  // epoch, at 5.
  EXPECT_EQ(rates, (std::vector<float>{1.0f, 0.5f, 0.5f, 0.25f, 0.25f, 0.125f}));
}

TEST(ReduceLROnPlateauTest, InFitTheLoggedRateFalls) {
  auto model = TinyModel(2);
  optimizers::Sgd sgd(optimizers::SgdOptions{.learning_rate = 0.1f});
  fit::Trainer trainer(*model, sgd);
  // A min_delta no epoch can beat: the rate is cut after every epoch but the first.
  ReduceLROnPlateau cb({.monitor = "loss", .factor = 0.5, .patience = 1, .min_delta = 100});
  absl::StatusOr<fit::History> h =
      trainer.Fit(BlobsDataset(20, 3, 10), {.epochs = 4, .callbacks = {&cb}, .verbose = 0});
  ASSERT_TRUE(h.ok()) << h.status();
  // Logged at each epoch's end, before the callback acts.
  EXPECT_EQ(h->at("learning_rate"), (std::vector<double>{0.1f, 0.1f, 0.05f, 0.025f}));
  EXPECT_EQ(sgd.learning_rate(), 0.0125f);
}

TEST(ReduceLROnPlateauTest, RejectsAFactorThatDoesNotReduce) {
  auto model = TinyModel(1);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  ReduceLROnPlateau cb({.factor = 1.5});
  cb.set_trainer(&trainer);
  EXPECT_EQ(cb.OnTrainBegin({}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::train::callbacks
