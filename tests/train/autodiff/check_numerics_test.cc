// Check numerics (train/autodiff/check_numerics.h, tf.debugging.enable_check_numerics): the first
// op producing a NaN or an Inf, forward or backward, is named with its layer and step.
#include "train/autodiff/check_numerics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/train/fit_test_util.h"
#include "train/autodiff/tape.h"
#include "train/backend/transfer.h"
#include "train/fit/trainer.h"
#include "train/ops/arithmetic.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::autodiff {
namespace {

using ::sluice::train::testing::T;
using ::testing::HasSubstr;

class CheckNumericsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    DisableCheckNumerics();
    SetNumericsStep(-1);
  }
};

TEST_F(CheckNumericsTest, OffByDefaultAndOffCostsNoError) {
  EXPECT_FALSE(CheckNumericsEnabled());
  absl::StatusOr<Tensor> y = ops::Log(T({0, 1}, {2}));
  ASSERT_TRUE(y.ok());
  EXPECT_TRUE(std::isinf(y->data<float>()[0]));
}

TEST_F(CheckNumericsTest, NamesTheOpAndTheElement) {
  EnableCheckNumerics();
  EXPECT_TRUE(ops::Log(T({1, 2}, {2})).ok());
  absl::Status s = ops::Log(T({1, 0, 2}, {3})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("Log produced -Inf (element 1 of [3])"));
  s = ops::Div(T({0}, {1}), T({0}, {1})).status();
  EXPECT_THAT(s.message(), HasSubstr("Div produced NaN"));
  // Large finite values whose sum overflows are not an error.
  const float big = std::numeric_limits<float>::max();
  EXPECT_TRUE(ops::Add(T({big, big}, {2}), T({0, 0}, {2})).ok());
}

TEST_F(CheckNumericsTest, NamesTheLayerAndTheStepInFit) {
  auto model = testing::TinyModel(2);
  optimizers::Sgd sgd;
  fit::Trainer trainer(*model, sgd);
  testing::RecordingCallback poison;
  // After step 2, a NaN in the last layer's kernel: step 3's MatMul there produces NaN.
  poison.on_batch_end = [&](int64_t batch, const callbacks::Logs&) -> absl::Status {
    if (trainer.global_step() != 2) return absl::OkStatus();
    Tensor k = *backend::ToHost(model->Variables()[2]->value());
    k.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
    return model->Variables()[2]->Assign(k);
  };
  EnableCheckNumerics();
  absl::Status s =
      trainer.Fit(testing::BlobsDataset(64, 1, 8), {.callbacks = {&poison}, .verbose = 0}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("MatMul in layer 2 (dense) at step 3 produced NaN"));
}

TEST_F(CheckNumericsTest, NamesTheOpWhoseGradientOverflows) {
  EnableCheckNumerics();
  Tape tape;
  Tensor x = T({1, 2}, {2});
  tape.Watch(x);
  Tensor y = *ops::Mul(x, T({10, 10}, {2}));  // finite forward
  const float big = std::numeric_limits<float>::max();
  absl::Status s = tape.Gradient(y, {x}, T({big, 1}, {2})).status();  // 10 * max overflows
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the gradient of Mul produced +Inf (element 0 of [2])"));
}

}  // namespace
}  // namespace sluice::train::autodiff
