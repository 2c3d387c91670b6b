// Check numerics (train/autodiff/check_numerics.h, tf.debugging.enable_check_numerics): the first
// op producing a NaN or an Inf, forward or backward, is named with its layer and step.
#include "train/autodiff/check_numerics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/status_macros.h"
#include "tests/train/fit_test_util.h"
#include "tests/train/skip_without_bfloat16.h"
#include "train/autodiff/tape.h"
#include "train/backend/compute_precision.h"
#include "train/backend/transfer.h"
#include "train/fit/trainer.h"
#include "train/function/function.h"
#include "train/ops/arithmetic.h"
#include "train/ops/batch_norm.h"
#include "train/ops/conv2d.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::autodiff {
namespace {

using ::sluice::train::testing::T;
using ::testing::HasSubstr;
using ::testing::Not;

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

// Under mixed_bfloat16 activations stay in bfloat16 between layers; the check reads them too
// (it passed over every tensor but float32 ones).
TEST_F(CheckNumericsTest, SeesANaNInABFloat16Output) {
  SLUICE_SKIP_WITHOUT_CPU_BFLOAT16();
  EnableCheckNumerics();
  backend::ScopedPrecision policy(backend::Precision::kMixedBFloat16);
  const Tensor filter = T({1}, {1, 1, 1, 1});
  const ops::Conv2DOptions keep{.keep_compute_dtype = true};
  absl::StatusOr<Tensor> fine = ops::Conv2D(T({1, 2, 3, 4}, {1, 2, 2, 1}), filter, keep);
  ASSERT_TRUE(fine.ok()) << fine.status();
  ASSERT_EQ(fine->dtype(), DType::kBFloat16);
  // oneDNN's bfloat16 kernel pairs neighbouring pixels of a one-channel input in its dot
  // products (one with a zero weight), so the NaN may show at element 0 or 1.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const absl::Status s = ops::Conv2D(T({1, nan, 3, 4}, {1, 2, 2, 1}), filter, keep).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("check numerics: Conv2D produced NaN (element "));
  EXPECT_THAT(std::string(s.message()), HasSubstr(" of [1, 2, 2, 1])"));
}

// A fused batch norm + ReLU turns a NaN output into 0; the NaN in x still shows in the batch's
// statistics, which the check reads too.
TEST_F(CheckNumericsTest, SeesANaNInputThroughAFusedBatchNormRelu) {
  EnableCheckNumerics();
  Tensor x = T({1, 2, 3, 4, 5, 6}, {3, 2});
  ASSERT_TRUE(ops::BatchNormReluTraining(x, T({1, 1}, {2}), T({0, 0}, {2}), 1e-3f).ok());
  x.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  const absl::Status s =
      ops::BatchNormReluTraining(x, T({1, 1}, {2}), T({0, 0}, {2}), 1e-3f).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("BatchNormReluTraining produced NaN"));
}

// Eagerly and compiled (the trace records the checks; steps 2 and 3 are replays).
TEST_F(CheckNumericsTest, NamesTheLayerAndTheStepInFit) {
  for (const bool eager : {true, false}) {
    SCOPED_TRACE(eager ? "eager" : "compiled");
    auto model = testing::TinyModel(2);
    optimizers::Sgd sgd;
    fit::Trainer trainer(*model, sgd, {.run_eagerly = eager});
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
        trainer.Fit(testing::BlobsDataset(64, 1, 8), {.callbacks = {&poison}, .verbose = 0})
            .status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("MatMulBias in layer 2 (dense) at step 3 produced NaN"));
    // The step ends with Fit: an op after it names none (it named step 3 when tests shared a
    // process).
    EXPECT_THAT(ops::Log(T({0}, {1})).status().message(), Not(HasSubstr("at step")));
  }
}

// A replay runs the checks the trace recorded, forward and backward, each after the kernels that
// wrote its tensor, naming the step being replayed.
TEST_F(CheckNumericsTest, ReplaysCheckAsTheEagerStepDoes) {
  EnableCheckNumerics();
  // y = log(x) * w and dy/dw, w a variable.
  Tensor w = T({1, 1}, {2});
  function::Function f([&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    Tape tape;
    tape.Watch(w);
    SLUICE_ASSIGN_OR_RETURN(Tensor log_x, ops::Log(in[0]));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Mul(log_x, w));
    SLUICE_ASSIGN_OR_RETURN(auto g, tape.Gradient(y, {w}, in[1]));
    return std::vector<Tensor>{y, *g[0]};
  });
  const float big = std::numeric_limits<float>::max();
  ASSERT_TRUE(f({T({1, 2}, {2}), T({1, 1}, {2})}).ok());
  ASSERT_TRUE(f({T({3, 4}, {2}), T({1, 1}, {2})}).ok());
  EXPECT_EQ(f.replays(), 1);
  SetNumericsStep(7);
  absl::Status s = f({T({5, 0}, {2}), T({1, 1}, {2})}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("check numerics: Log at step 7 produced -Inf (element 1 of [2])"));
  // The gradient dy/dw = log(x) * g: e (log 3 > 1) times max overflows.
  s = f({T({3, 1}, {2}), T({big, 1}, {2})}).status();
  EXPECT_THAT(s.message(),
              HasSubstr("the gradient of Mul at step 7 produced +Inf (element 0 of [2])"));
  // Both failures were replays of the one trace (a failed replay is not counted as one).
  EXPECT_EQ(f.traces_made(), 1);
  EXPECT_EQ(f.replays(), 1);
  EXPECT_EQ(f.eager_calls(), 0);
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
