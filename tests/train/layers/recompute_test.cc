// Recompute (train/layers/recompute.h): the same outputs and gradients as the wrapped module
// alone, bit for bit (a conv/batch-norm/dropout block), state moved once (BatchNorm's moving
// statistics, Dropout's counter and masks), frozen variables without gradients, finite
// differences, lazy layers, errors, activations not held, and the guarded device. Then the two
// users of RecomputeGrad, the function form: Sequential::RecomputeLayers and ResidualBlock's
// `recompute` option, each against the same module without it.
#include "train/layers/recompute.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "tests/train/module_gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/backend/cpu/cpu_allocator.h"
#include "train/backend/transfer.h"
#include "train/layers/batch_norm.h"
#include "train/layers/conv2d.h"
#include "train/layers/dropout.h"
#include "train/layers/layer_config.h"
#include "train/layers/relu.h"
#include "train/layers/residual_block.h"
#include "train/layers/sequential.h"
#include "train/layers/summary.h"
#include "train/ops/arithmetic.h"

namespace sluice::train::layers {
namespace {

using ::sluice::train::testing::CheckModuleGradients;
using ::sluice::train::testing::RandomTensor;
using Grads = std::vector<std::optional<Tensor>>;

Conv2DLayerOptions Same(uint64_t seed) {
  return {.conv = {.padding = ops::Padding::kSame}, .seed = seed};
}

// conv -> batch norm -> relu -> dropout -> conv: every kind of state Recompute must handle.
std::unique_ptr<Sequential> Block(int64_t channels = 3) {
  auto block = std::make_unique<Sequential>();
  block->Add(std::make_unique<Conv2D>(channels, 4, 3, 3, Same(11)));
  block->Add(std::make_unique<BatchNorm>(4));
  block->Add(std::make_unique<ReLU>());
  block->Add(std::make_unique<Dropout>(0.4f, 7));
  block->Add(std::make_unique<Conv2D>(4, 5, 3, 3, Same(12)));
  return block;
}

std::unique_ptr<Recompute> Recomputed(std::unique_ptr<Module> m) {
  return std::make_unique<Recompute>(std::move(m));
}

// Host copies (the CPU or the guarded device).
Tensor Host(const Tensor& t) {
  absl::StatusOr<Tensor> host = backend::CopyTo(t, Device::Cpu());
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? *host : Tensor();
}

struct Step {
  Tensor output;
  Grads grads;  // the input's, then each of `vars`
};

// One forward and backward pass: the gradients of sum(w * module(x)) with respect to x and
// `vars` (every trainable variable of the module when empty), with a fixed w.
Step RunStep(Module& module, const Tensor& x, std::vector<autodiff::Variable*> vars = {}) {
  if (vars.empty()) vars = module.TrainableVariables();
  Step step;
  autodiff::Tape tape;
  tape.Watch(x);
  absl::StatusOr<Tensor> y = module.Forward(x, /*training=*/true);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return step;
  step.output = *y;
  std::vector<Tensor> sources = {x};
  for (autodiff::Variable* v : vars) sources.push_back(v->mutable_value());
  absl::StatusOr<Tensor> w = backend::CopyTo(RandomTensor(y->shape(), 99, 0.5f, 1.5f), x.device());
  EXPECT_TRUE(w.ok());
  absl::StatusOr<Grads> grads = tape.Gradient(*y, sources, *w);
  EXPECT_TRUE(grads.ok()) << grads.status();
  if (grads.ok()) step.grads = *std::move(grads);
  return step;
}

void ExpectIdentical(const Step& plain, const Step& recomputed) {
  EXPECT_TRUE(Host(plain.output).Equals(Host(recomputed.output)));
  ASSERT_EQ(plain.grads.size(), recomputed.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i) {
    ASSERT_EQ(plain.grads[i].has_value(), recomputed.grads[i].has_value()) << "source " << i;
    if (!plain.grads[i]) continue;
    EXPECT_TRUE(Host(*plain.grads[i]).Equals(Host(*recomputed.grads[i])))
        << "source " << i << ": " << Host(*plain.grads[i]).DebugString(4) << " vs "
        << Host(*recomputed.grads[i]).DebugString(4);
  }
}

void ExpectSameModuleVariables(Module& a, Module& b) {
  std::vector<autodiff::Variable*> va = a.Variables(), vb = b.Variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    EXPECT_EQ(va[i]->name(), vb[i]->name());
    EXPECT_TRUE(Host(va[i]->mutable_value()).Equals(Host(vb[i]->mutable_value()))) << va[i]->name();
  }
}

TEST(RecomputeTest, ForwardsTheWrappedModule) {
  auto block = Block();
  Sequential* inner = block.get();
  Recompute r(std::move(block));
  EXPECT_EQ(&r.module(), inner);
  EXPECT_EQ(r.name(), "sequential");
  EXPECT_EQ(r.Variables(), inner->Variables());
  EXPECT_EQ(r.TrainableVariables().size(), 6u);  // two kernels and biases, gamma, beta
  ASSERT_EQ(r.Children().size(), 1u);
  EXPECT_EQ(r.Children()[0], inner);
  EXPECT_TRUE(r.built());
  r.set_trainable(false);
  EXPECT_FALSE(inner->trainable());
  EXPECT_TRUE(r.TrainableVariables().empty());
  r.set_trainable(true);
  EXPECT_EQ(r.TrainableVariables().size(), 6u);
}

TEST(RecomputeTest, GradientsEqualNoRecomputeBitForBit) {
  auto plain = Block();
  auto recomputed = Recomputed(Block());
  const Tensor x = RandomTensor({2, 6, 5, 3}, 1);
  // Three steps: Dropout draws a new mask each, from a counter both must advance alike.
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    ExpectIdentical(RunStep(*plain, x), RunStep(*recomputed, x));
    ExpectSameModuleVariables(*plain, *recomputed);
  }
}

TEST(RecomputeTest, InsideALargerModelAndAPersistentTape) {
  // The recorded op sits between others, and a persistent tape runs its backward twice.
  Sequential plain, recomputed;
  for (Sequential* model : {&plain, &recomputed}) {
    model->Add(std::make_unique<Conv2D>(3, 3, 3, 3, Same(21)));
    std::unique_ptr<Module> block = Block();
    if (model == &recomputed) block = Recomputed(std::move(block));
    model->Add(std::move(block));
    model->Add(std::make_unique<ReLU>());
  }
  const Tensor x = RandomTensor({2, 5, 5, 3}, 2);
  std::vector<Grads> results;
  for (Sequential* model : {&plain, &recomputed}) {
    autodiff::Tape tape({.persistent = true});
    Tensor y = *model->Forward(x, true);
    Tensor loss = *ops::Mul(y, y);
    std::vector<autodiff::Variable*> vars = model->TrainableVariables();
    Grads first = *tape.Gradient(loss, vars);
    Grads second = *tape.Gradient(loss, vars);
    ASSERT_EQ(first.size(), 8u);
    for (size_t i = 0; i < first.size(); ++i) {
      ASSERT_TRUE(first[i] && second[i]) << i;
      EXPECT_TRUE(first[i]->Equals(*second[i])) << i;
    }
    results.push_back(std::move(first));
  }
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_TRUE(results[0][i]->Equals(*results[1][i])) << i;
  }
  ExpectSameModuleVariables(plain, recomputed);
}

TEST(RecomputeTest, BatchNormStatisticsMoveOnce) {
  auto plain = std::make_unique<Sequential>();
  plain->Add(std::make_unique<Conv2D>(3, 4, 3, 3, Same(5)));
  plain->Add(std::make_unique<BatchNorm>(4, BatchNormOptions{.momentum = 0.5f}));
  auto recomputed = std::make_unique<Sequential>();
  recomputed->Add(std::make_unique<Conv2D>(3, 4, 3, 3, Same(5)));
  auto* bn = new BatchNorm(4, BatchNormOptions{.momentum = 0.5f});
  recomputed->Add(std::unique_ptr<Module>(bn));
  Recompute r(std::move(recomputed));
  const Tensor x = RandomTensor({3, 4, 4, 3}, 3);
  const Tensor mean0 = bn->moving_mean().mutable_value().Clone();
  RunStep(*plain, x);
  RunStep(r, x);
  // Moved (away from zeros), and by exactly one update: a second one, from the recomputation,
  // would move them again by half the distance left.
  EXPECT_FALSE(bn->moving_mean().mutable_value().Equals(mean0));
  ExpectSameModuleVariables(*plain, r);
}

TEST(RecomputeTest, CalledTwiceInOneStep) {
  // Weights shared by two calls: each recomputation starts from the state its own call started
  // from, and the state ends as both calls left it (moved twice, the counter at 2), not as the
  // first call's recomputation, which runs last, would leave it.
  auto plain = Block();
  Recompute recomputed(Block());
  const Tensor x = RandomTensor({2, 5, 5, 3}, 14);
  std::vector<Grads> results;
  for (Module* m : {static_cast<Module*>(plain.get()), static_cast<Module*>(&recomputed)}) {
    autodiff::Tape tape;
    tape.Watch(x);
    Tensor first = *m->Forward(x, true);
    Tensor second = *m->Forward(x, true);  // another dropout mask, batch norm moved again
    Tensor y = *ops::Mul(first, second);
    std::vector<Tensor> sources = {x};
    for (autodiff::Variable* v : m->TrainableVariables()) sources.push_back(v->mutable_value());
    results.push_back(*tape.Gradient(y, sources));
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) {
    ASSERT_TRUE(results[0][i] && results[1][i]) << i;
    EXPECT_TRUE(results[0][i]->Equals(*results[1][i])) << i;
  }
  ExpectSameModuleVariables(*plain, recomputed);
  EXPECT_EQ(dynamic_cast<Dropout*>(recomputed.Children()[0]->Children()[3])->calls(), 2);
}

TEST(RecomputeTest, DropoutMasksIdentical) {
  auto* dropout = new Dropout(0.5f, 3);
  Recompute r{std::unique_ptr<Module>(dropout)};
  const Tensor x = RandomTensor({64, 16}, 4, 0.5f, 1.5f);  // no zeros of its own
  for (int step = 0; step < 2; ++step) {
    autodiff::Tape tape;
    tape.Watch(x);
    Tensor y = *r.Forward(x, true);
    Tensor g = *(*tape.Gradient(y, {x}))[0];
    EXPECT_EQ(dropout->calls(), step + 1);  // not advanced by the recomputation
    int dropped = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      // The gradient's mask is the forward's: 2 where kept, 0 where dropped.
      const bool kept = y.data<float>()[i] != 0;
      dropped += !kept;
      EXPECT_EQ(g.data<float>()[i], kept ? 2.0f : 0.0f) << i;
    }
    EXPECT_GT(dropped, 300);
    EXPECT_LT(dropped, 724);
  }
}

TEST(RecomputeTest, FrozenVariablesGetNoGradient) {
  auto plain = Block();
  auto block = Block();
  Module* first_conv = block->Children()[0];
  auto recomputed = Recomputed(std::move(block));
  plain->Children()[0]->set_trainable(false);
  first_conv->set_trainable(false);
  ASSERT_EQ(recomputed->TrainableVariables().size(), 4u);
  const Tensor x = RandomTensor({2, 5, 5, 3}, 5);
  // Every variable listed, frozen ones included: those get none.
  Step a = RunStep(*plain, x, plain->Variables());
  Step b = RunStep(*recomputed, x, recomputed->Variables());
  ExpectIdentical(a, b);
  EXPECT_FALSE(b.grads[1].has_value());  // the frozen kernel
  EXPECT_FALSE(b.grads[2].has_value());  // and bias
  EXPECT_TRUE(b.grads[3].has_value());   // batch norm's gamma

  // A wholly frozen block: no variable gets a gradient, the input still does, and its batch
  // norm runs as in inference (Keras), its statistics untouched.
  recomputed->set_trainable(false);
  std::vector<Tensor> before;
  for (autodiff::Variable* v : recomputed->Variables())
    before.push_back(v->mutable_value().Clone());
  Step frozen = RunStep(*recomputed, x, recomputed->Variables());
  ASSERT_TRUE(frozen.grads[0].has_value());
  for (size_t i = 1; i < frozen.grads.size(); ++i) EXPECT_FALSE(frozen.grads[i]) << i;
  const std::vector<autodiff::Variable*> vars = recomputed->Variables();
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i]->name().find("dropout") != std::string::npos) continue;  // counts calls
    EXPECT_TRUE(vars[i]->mutable_value().Equals(before[i])) << vars[i]->name();
  }
}

TEST(RecomputeTest, FiniteDifferences) {
  // No dropout: the check runs the module many times and needs the same function each time.
  auto block = std::make_unique<Sequential>();
  block->Add(std::make_unique<Conv2D>(2, 3, 3, 3, Same(31)));
  block->Add(std::make_unique<BatchNorm>(3));
  block->Add(std::make_unique<ReLU>());
  block->Add(std::make_unique<Conv2D>(3, 2, 3, 3, Same(32)));
  Recompute r(std::move(block));
  // The training half to an absolute 2e-3, not the default 1e-3: rounding in the float forward
  // moves this block's 64-output objective by a few 1e-6, which a central difference at the
  // default step of 1e-3 divides by 2e-3. Measured: 1.45e-3 off at input element 58 with our
  // batch norm, whose tape gradient agrees with oneDNN's to 3e-7 (oneDNN's was 1.3e-3 off there
  // at a step of 5e-4). A larger step would cross the ReLU's kinks when a kernel element moves.
  const train::testing::GradientCheckOptions training_options{.absolute_tolerance = 2e-3};
  EXPECT_EQ(
      CheckModuleGradients(r, RandomTensor({2, 4, 4, 2}, 6), /*training=*/true, training_options),
      "");
  EXPECT_EQ(CheckModuleGradients(r, RandomTensor({2, 4, 4, 2}, 7), /*training=*/false), "");
}

TEST(RecomputeTest, ActivationsAreNotHeld) {
  // Activations of 8 x 32 x 32 x 8 floats (256 KiB each, all from the CPU allocator): the plain
  // block keeps three on the tape until the backward pass (the relus' outputs, which the next
  // convolutions read too, and the output; the biases are added inside the convolutions),
  // Recompute its output only.
  auto make = [] {
    auto block = std::make_unique<Sequential>();
    for (int i = 0; i < 3; ++i) {
      block->Add(std::make_unique<Conv2D>(8, 8, 3, 3, Same(40 + i)));
      if (i < 2) block->Add(std::make_unique<ReLU>());
    }
    return block;
  };
  const size_t kActivation = 8 * 32 * 32 * 8 * sizeof(float);
  const Tensor x = RandomTensor({8, 32, 32, 8}, 8);
  auto held_after_forward = [&](Module& m, Step& step) {
    autodiff::Tape tape;
    tape.Watch(x);
    const size_t before = backend::cpu::CpuAllocator::live_bytes();
    Tensor y = *m.Forward(x, true);
    const size_t held = backend::cpu::CpuAllocator::live_bytes() - before;
    step.output = y;
    std::vector<Tensor> sources = {x};
    for (autodiff::Variable* v : m.TrainableVariables()) sources.push_back(v->mutable_value());
    step.grads = *tape.Gradient(y, sources);
    return held;
  };
  auto plain = make();
  Recompute recomputed(make());
  Step a, b;
  const size_t plain_held = held_after_forward(*plain, a);
  const size_t recomputed_held = held_after_forward(recomputed, b);
  EXPECT_GE(plain_held, 3 * kActivation);
  EXPECT_LE(recomputed_held, kActivation + kActivation / 8);  // the output, and small things
  ExpectIdentical(a, b);
}

TEST(RecomputeTest, NoTapeRunsTheModuleAlone) {
  auto plain = Block();
  Recompute r(Block());
  const Tensor x = RandomTensor({2, 5, 5, 3}, 9);
  EXPECT_TRUE(plain->Forward(x, true)->Equals(*r.Forward(x, true)));
  EXPECT_TRUE(plain->Forward(x, false)->Equals(*r.Forward(x, false)));
  ExpectSameModuleVariables(*plain, r);
}

TEST(RecomputeTest, LazyLayers) {
  auto make = [] {
    auto block = std::make_unique<Sequential>();
    block->Add(std::make_unique<Conv2D>(4, 3, Same(51)));
    block->Add(std::make_unique<BatchNorm>());
    block->Add(std::make_unique<ReLU>());
    return block;
  };
  auto plain = make();
  Recompute r(make());
  EXPECT_FALSE(r.built());
  EXPECT_TRUE(r.Variables().empty());
  const Tensor x = RandomTensor({2, 5, 5, 3}, 10);
  // The first call builds (recorded as without Recompute), the later ones recompute.
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(step);
    ExpectIdentical(RunStep(*plain, x), RunStep(r, x));
    EXPECT_TRUE(r.built());
    ExpectSameModuleVariables(*plain, r);
  }
  // Build() reaches the wrapped module too: the same weights as built by a first call.
  Recompute built(make());
  ASSERT_TRUE(built.Build(Shape{1, 5, 5, 3}).ok());
  EXPECT_TRUE(built.built());
  std::vector<autodiff::Variable*> want = plain->TrainableVariables();
  std::vector<autodiff::Variable*> got = built.TrainableVariables();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i]->name(), got[i]->name());
    EXPECT_TRUE(want[i]->mutable_value().Equals(got[i]->mutable_value())) << want[i]->name();
  }
}

// Dropout that fails when called for the `fail_on`-th time (1-based), before drawing a mask.
class Flaky : public Module {
 public:
  explicit Flaky(int fail_on) : fail_on_(fail_on) {}
  absl::StatusOr<Tensor> Forward(const Tensor& input, bool training) override {
    if (++calls_ == fail_on_) return absl::ResourceExhaustedError("flaky: out of memory");
    return dropout_.Forward(input, training);
  }
  std::vector<autodiff::Variable*> Variables() override { return dropout_.Variables(); }
  Dropout& dropout() { return dropout_; }

 private:
  int fail_on_;
  int calls_ = 0;
  Dropout dropout_{0.5f, 1};
};

TEST(RecomputeTest, ErrorsOfTheWrappedForward) {
  const Tensor x = RandomTensor({4, 4}, 11);
  {
    Recompute r(std::make_unique<Flaky>(1));
    autodiff::Tape tape;
    tape.Watch(x);
    absl::StatusOr<Tensor> y = r.Forward(x, true);
    EXPECT_EQ(y.status().code(), absl::StatusCode::kResourceExhausted);
  }
  {
    // The recomputation fails: Gradient says so, and the state is the forward pass's (the
    // counter was set back to 0 for the recomputation).
    auto* flaky = new Flaky(2);
    Recompute r{std::unique_ptr<Module>(flaky)};
    autodiff::Tape tape;
    tape.Watch(x);
    Tensor y = *r.Forward(x, true);
    absl::StatusOr<Grads> grads = tape.Gradient(y, {x});
    EXPECT_EQ(grads.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(grads.status().message().find("recomputing the forward pass"), std::string::npos)
        << grads.status();
    EXPECT_EQ(flaky->dropout().calls(), 1);
  }
}

TEST(RecomputeTest, SummaryShowsTheWrappedModule) {
  Sequential model;
  model.Add(Recomputed(Block()));
  model.Add(std::make_unique<ReLU>());
  Tensor x = RandomTensor({1, 4, 4, 3}, 12);
  ASSERT_TRUE(model.Forward(x, false).ok());
  const std::string summary = Summary(model);
  EXPECT_NE(summary.find("0/sequential"), std::string::npos) << summary;
  // The wrapped block's variables keep their container's prefix.
  EXPECT_EQ(model.Variables()[0]->name(), "0/0/conv2d/kernel");
}

TEST(RecomputeTest, GuardedGradientsMatchCpu) {
  ::sluice::train::testing::RegisterGuardedBackend();
  auto cpu = Recomputed(Block());
  auto guarded = Recomputed(Block());
  ASSERT_TRUE(guarded->To(Device::Guarded()).ok());
  const Tensor x = RandomTensor({2, 5, 5, 3}, 13);
  const Tensor gx = *backend::CopyTo(x, Device::Guarded());
  const int64_t kernels = ::sluice::train::testing::GuardedKernelCalls();
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(step);
    ExpectIdentical(RunStep(*cpu, x), RunStep(*guarded, gx));
    ExpectSameModuleVariables(*cpu, *guarded);
  }
  EXPECT_GT(::sluice::train::testing::GuardedKernelCalls() - kernels, 20);
}

// The bytes of CPU-allocator tensors that a training forward pass of `m` on `x` leaves alive under
// a tape (the output included): what the tape and the ops keep for the backward pass.
size_t HeldAfterForward(Module& m, const Tensor& x) {
  autodiff::Tape tape;
  tape.Watch(x);
  const size_t before = backend::cpu::CpuAllocator::live_bytes();
  absl::StatusOr<Tensor> y = m.Forward(x, true);
  EXPECT_TRUE(y.ok()) << y.status();
  return backend::cpu::CpuAllocator::live_bytes() - before;
}

// The stem of resnet-small and another layer, [0, 3) recomputed when `recompute`.
std::unique_ptr<Sequential> Stem(bool recompute) {
  auto model = std::make_unique<Sequential>();
  model->Add(std::make_unique<Conv2D>(3, 4, 3, 3, Same(61)));
  model->Add(std::make_unique<BatchNorm>(4));
  model->Add(std::make_unique<ReLU>());
  model->Add(std::make_unique<Dropout>(0.3f, 62));
  model->Add(std::make_unique<Conv2D>(4, 2, 3, 3, Same(63)));
  if (recompute) {
    EXPECT_TRUE(model->RecomputeLayers(0, 3).ok());
  }
  return model;
}

TEST(RecomputeLayersTest, GradientsEqualNoRecomputeBitForBit) {
  auto plain = Stem(false);
  auto recomputed = Stem(true);
  // A second segment around the Dropout (layer 3): its mask drawn again in the recomputation.
  ASSERT_TRUE(recomputed->RecomputeLayers(3, 4).ok());
  EXPECT_THAT(
      recomputed->recomputed_segments(),
      ::testing::ElementsAre(std::pair<size_t, size_t>{0, 3}, std::pair<size_t, size_t>{3, 4}));
  const Tensor x = RandomTensor({2, 6, 5, 3}, 64);
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    ExpectIdentical(RunStep(*plain, x), RunStep(*recomputed, x));
    ExpectSameModuleVariables(*plain, *recomputed);  // names too: "0/conv2d/kernel", ...
  }
  EXPECT_EQ(recomputed->Variables()[0]->name(), "0/conv2d/kernel");
}

TEST(RecomputeLayersTest, ActivationsAreNotHeld) {
  // conv -> batch norm -> relu: the plain layers keep the conv's output (batch norm's input) and
  // relu's (8 x 32 x 32 x 8 floats, 256 KiB each); with conv and batch norm one segment, relu's
  // output only.
  auto make = [](bool recompute) {
    auto model = std::make_unique<Sequential>();
    model->Add(std::make_unique<Conv2D>(8, 8, 3, 3, Same(65)));
    model->Add(std::make_unique<BatchNorm>(8));
    model->Add(std::make_unique<ReLU>());
    if (recompute) {
      EXPECT_TRUE(model->RecomputeLayers(0, 2).ok());
    }
    return model;
  };
  const size_t kActivation = 8 * 32 * 32 * 8 * sizeof(float);
  const Tensor x = RandomTensor({8, 32, 32, 8}, 66);
  auto plain = make(false);
  auto recomputed = make(true);
  EXPECT_GE(HeldAfterForward(*plain, x), 2 * kActivation);
  EXPECT_LE(HeldAfterForward(*recomputed, x), kActivation + kActivation / 8);
}

TEST(RecomputeLayersTest, RejectsBadRanges) {
  auto model = Stem(false);
  EXPECT_EQ(model->RecomputeLayers(2, 2).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->RecomputeLayers(3, 6).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(model->RecomputeLayers(1, 3).ok());
  const absl::Status overlap = model->RecomputeLayers(2, 4);
  EXPECT_EQ(overlap.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(overlap.message(), ::testing::HasSubstr("overlaps the segment [1, 3)"));
  EXPECT_EQ(model->recomputed_segments().size(), 1u);
}

TEST(RecomputeLayersTest, ErrorsNameTheSegmentAndTheLayer) {
  auto model = std::make_unique<Sequential>();
  auto* flaky = new Flaky(2);  // fails in the recomputation
  model->Add(std::make_unique<ReLU>());
  model->Add(std::unique_ptr<Module>(flaky));
  ASSERT_TRUE(model->RecomputeLayers(0, 2).ok());
  const Tensor x = RandomTensor({4, 4}, 67);
  autodiff::Tape tape;
  tape.Watch(x);
  Tensor y = *model->Forward(x, true);
  absl::StatusOr<Grads> grads = tape.Gradient(y, {x});
  EXPECT_EQ(grads.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(grads.status().message(),
              ::testing::HasSubstr("recompute (layers 0 to 1): recomputing the forward pass for "
                                   "its gradient: layer 1 (layer): flaky"));
}

TEST(RecomputeLayersTest, SavedInTheConfig) {
  auto model = Stem(true);
  absl::StatusOr<LayerConfig> config = model->GetConfig();
  ASSERT_TRUE(config.ok()) << config.status();
  absl::StatusOr<std::unique_ptr<Module>> loaded = LayerFromConfig(*config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto* seq = dynamic_cast<Sequential*>(loaded->get());
  ASSERT_NE(seq, nullptr);
  EXPECT_THAT(seq->recomputed_segments(), ::testing::ElementsAre(std::pair<size_t, size_t>{0, 3}));
  // A segment past the layers is refused, naming it.
  config->ints["recompute_1_begin"] = 4;
  config->ints["recompute_1_end"] = 9;
  loaded = LayerFromConfig(*config);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(loaded.status().message(), ::testing::HasSubstr("[4, 9)"));
}

// Identity and projection blocks, with and without `recompute`, the same seed.
TEST(ResidualBlockRecomputeTest, GradientsAndStatisticsEqualNoRecomputeBitForBit) {
  for (int64_t stride : {1, 2}) {
    SCOPED_TRACE(stride);
    ResidualBlock plain(3, stride == 1 ? 3 : 4, {.stride = stride, .seed = 70});
    ResidualBlock recomputed(3, stride == 1 ? 3 : 4,
                             {.stride = stride, .seed = 70, .recompute = true});
    EXPECT_TRUE(recomputed.recompute());
    EXPECT_EQ(plain.has_projection(), stride == 2);
    const Tensor x = RandomTensor({2, 6, 6, 3}, 71);
    for (int step = 0; step < 2; ++step) {
      SCOPED_TRACE(step);
      ExpectIdentical(RunStep(plain, x), RunStep(recomputed, x));
      ExpectSameModuleVariables(plain, recomputed);  // batch norm's moving statistics moved once
    }
  }
}

TEST(ResidualBlockRecomputeTest, HoldsTwoActivations) {
  // Plain, an identity block keeps conv1's output (bn1's input), the first relu's (conv2's
  // input), conv2's (bn2's input) and the last relu's, 8 x 32 x 32 x 8 floats each, for its
  // backward pass; recomputed, the two relus' outputs only.
  const size_t kActivation = 8 * 32 * 32 * 8 * sizeof(float);
  const Tensor x = RandomTensor({8, 32, 32, 8}, 72);
  ResidualBlock plain(8, 8, {.seed = 73});
  ResidualBlock recomputed(8, 8, {.seed = 73, .recompute = true});
  EXPECT_GE(HeldAfterForward(plain, x), 4 * kActivation);
  EXPECT_LE(HeldAfterForward(recomputed, x), 2 * kActivation + kActivation / 8);
}

TEST(ResidualBlockRecomputeTest, FiniteDifferences) {
  ResidualBlock block(2, 3, {.stride = 2, .seed = 74, .recompute = true});
  EXPECT_EQ(CheckModuleGradients(block, RandomTensor({2, 4, 4, 2}, 75), /*training=*/true), "");
}

TEST(ResidualBlockRecomputeTest, SavedInTheConfig) {
  ResidualBlock block(2, 3, {.recompute = true});
  absl::StatusOr<LayerConfig> config = block.GetConfig();
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->ints.at("recompute"), 1);
  absl::StatusOr<std::unique_ptr<Module>> loaded = LayerFromConfig(*config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(dynamic_cast<ResidualBlock&>(**loaded).recompute());
  config->ints.erase("recompute");  // a model saved before the option: off
  loaded = LayerFromConfig(*config);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(dynamic_cast<ResidualBlock&>(**loaded).recompute());
}

TEST(ResidualBlockRecomputeTest, GuardedGradientsMatchCpu) {
  ::sluice::train::testing::RegisterGuardedBackend();
  ResidualBlock cpu(3, 4, {.stride = 2, .seed = 76, .recompute = true});
  ResidualBlock guarded(3, 4, {.stride = 2, .seed = 76, .recompute = true});
  ASSERT_TRUE(guarded.To(Device::Guarded()).ok());
  const Tensor x = RandomTensor({2, 5, 5, 3}, 77);
  const Tensor gx = *backend::CopyTo(x, Device::Guarded());
  for (int step = 0; step < 2; ++step) {
    SCOPED_TRACE(step);
    ExpectIdentical(RunStep(cpu, x), RunStep(guarded, gx));
    ExpectSameModuleVariables(cpu, guarded);
  }
}

}  // namespace
}  // namespace sluice::train::layers
