#include "train/recipes/callbacks.h"

#include "gtest/gtest.h"
#include "train/callbacks/early_stopping.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/callbacks/tensorboard.h"

namespace sluice::train::recipes {
namespace {

TEST(CallbacksRecipeTest, NoneUnlessAskedFor) { EXPECT_TRUE(MakeCallbacks({}).empty()); }

TEST(CallbacksRecipeTest, EachOptionAddsItsCallbackInFitsOrder) {
  auto made =
      MakeCallbacks({.log_dir = "logs", .checkpoint = "run.ckpt", .early_stopping_patience = 3});
  ASSERT_EQ(made.size(), 3u);
  EXPECT_NE(dynamic_cast<callbacks::TensorBoard*>(made[0].get()), nullptr);
  EXPECT_NE(dynamic_cast<callbacks::ModelCheckpoint*>(made[1].get()), nullptr);
  EXPECT_NE(dynamic_cast<callbacks::EarlyStopping*>(made[2].get()), nullptr);
}

// Every rank checkpoints (the save gathers their input positions); only the chief logs.
TEST(CallbacksRecipeTest, OnlyTheChiefWritesTensorBoardFiles) {
  auto made = MakeCallbacks({.log_dir = "logs", .checkpoint = "run.ckpt", .chief = false});
  ASSERT_EQ(made.size(), 1u);
  EXPECT_NE(dynamic_cast<callbacks::ModelCheckpoint*>(made[0].get()), nullptr);
}

}  // namespace
}  // namespace sluice::train::recipes
