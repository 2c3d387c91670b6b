#include "train/backend/optimizer_update.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/train/gradient_check.h"
#include "train/backend/backend.h"
#include "train/backend/cpu/cpu_backend.h"

namespace sluice::train::backend {
namespace {

using ::sluice::train::testing::RandomTensor;
using ::sluice::train::testing::T;

Tensor Step() { return T({0.1f, 0, 0, 0}, {4}); }

// What CheckUpdate refuses, each with the variable's position and the operand named.
TEST(OptimizerUpdateTest, RefusesOperandsThatDoNotFitTheRule) {
  const UpdateRule adam{.kind = UpdateKind::kAdam, .beta_1 = 0.9f, .beta_2 = 0.999f};
  Tensor w0 = RandomTensor({4}, 1), g0 = RandomTensor({4}, 2), m0 = RandomTensor({4}, 3),
         v0 = RandomTensor({4}, 4);
  Tensor w1 = RandomTensor({3}, 5), g1 = RandomTensor({3}, 6), m1 = RandomTensor({3}, 7),
         v1 = RandomTensor({3}, 8);
  const Tensor step = Step();
  const UpdateOperands good{.w = &w0, .g = &g0, .slots = {&m0, &v0}};
  EXPECT_TRUE(CheckUpdate(adam, {&good, 1}, step).ok());
  auto refused = [&](const UpdateRule& rule, const UpdateOperands& second,
                     const Tensor& s = Step()) {
    const UpdateOperands vars[] = {good, second};
    const absl::Status status = CheckUpdate(rule, vars, s);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    return std::string(status.message());
  };
  EXPECT_EQ(refused(adam, {.w = &w1, .g = &g1, .slots = {&m1}}),
            "AdamUpdate: variable 1's slot 1 is missing (backend/optimizer_update.h)");
  EXPECT_EQ(refused(adam, {.w = &w1, .g = &g1, .slots = {&m1, &v1, &v1}}),
            "AdamUpdate: variable 1's slot 2 is not used (backend/optimizer_update.h)");
  EXPECT_EQ(refused(adam, {.w = &w1, .g = &g0, .slots = {&m1, &v1}}),
            "AdamUpdate: variable 1's gradient must be float32 with 3 elements on cpu, not "
            "float32[4] on cpu");
  EXPECT_EQ(refused(adam, {.w = &w1, .g = nullptr}), "AdamUpdate: variable 1 has no gradient");
  // The same variable twice would be written twice at once by one pass.
  EXPECT_EQ(refused(adam, good), "AdamUpdate: variable 1 is an earlier variable again");
  // SGD keeps a velocity only with momentum; RMSprop an average gradient only when centered.
  const UpdateRule sgd{.kind = UpdateKind::kSgd};
  const UpdateOperands plain{.w = &w0, .g = &g0};
  EXPECT_TRUE(CheckUpdate(sgd, {&plain, 1}, step).ok());
  EXPECT_NE(refused(sgd, {.w = &w1, .g = &g1, .slots = {&m1}}).find("slot 0 is not used"),
            std::string::npos);
  const UpdateRule centered{.kind = UpdateKind::kRmsprop, .rho = 0.9f, .centered = true};
  EXPECT_NE(refused(centered, {.w = &w1, .g = &g1, .slots = {&m1}}).find("slot 1 is missing"),
            std::string::npos);
  EXPECT_NE(refused(sgd, plain, T({0.1f}, {1})).find("float32[4]"), std::string::npos);
  // The step is checked with no variable too.
  EXPECT_FALSE(CheckUpdate(sgd, {}, T({0.1f}, {1})).ok());
  EXPECT_EQ(UpdateName(UpdateKind::kNadam), std::string("NadamUpdate"));
}

// A refused update changes no variable, not even the ones before the bad one.
TEST(OptimizerUpdateTest, ARefusedUpdateChangesNothing) {
  Tensor w0 = RandomTensor({4}, 1), g0 = RandomTensor({4}, 2), w1 = RandomTensor({3}, 5),
         g1 = RandomTensor({2}, 6);
  const Tensor before = RandomTensor({4}, 1);
  const UpdateOperands vars[] = {{.w = &w0, .g = &g0}, {.w = &w1, .g = &g1}};
  const absl::Status status =
      cpu::CpuBackend::Get().OptimizerUpdate({.kind = UpdateKind::kSgd}, vars, Step());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_TRUE(w0.Equals(before));
  // The same update of the first alone goes through.
  ASSERT_TRUE(
      cpu::CpuBackend::Get().OptimizerUpdate({.kind = UpdateKind::kSgd}, {vars, 1}, Step()).ok());
  EXPECT_FALSE(w0.Equals(before));
}

}  // namespace
}  // namespace sluice::train::backend
