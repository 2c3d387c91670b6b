#include "train/function/function.h"

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/backend/guarded_backend.h"
#include "tests/train/gradient_check.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_allocator.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"
#include "train/function/program.h"
#include "train/layers/dense.h"
#include "train/layers/dropout.h"
#include "train/layers/flatten.h"
#include "train/layers/recompute.h"
#include "train/layers/sequential.h"
#include "train/metrics/mean.h"
#include "train/models/model_zoo.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/dropout.h"
#include "train/ops/matmul.h"
#include "train/ops/reduce.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/learning_rate_schedule.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::function {
namespace {

using ::testing::HasSubstr;
using testing::RandomTensor;

// Random lifetimes and sizes: blocks whose lives overlap never share a byte, every offset is
// aligned, and blocks with disjoint lives do share memory (the arena is smaller than their sum).
TEST(PlaceSlotsTest, OverlappingLivesNeverShareMemory) {
  std::mt19937 rng(3);
  for (int round = 0; round < 50; ++round) {
    std::vector<SlotPlacement> slots(40);
    size_t sum = 0;
    for (SlotPlacement& s : slots) {
      s.first = static_cast<int>(rng() % 100);
      s.last = s.first + static_cast<int>(rng() % 20);
      s.bytes = 1 + rng() % 10000;
      s.alignment = s.bytes > 5000 ? 4096 : 256;
      sum += (s.bytes + s.alignment - 1) / s.alignment * s.alignment;
    }
    const size_t total = PlaceSlots(slots);
    EXPECT_LT(total, sum);
    for (size_t i = 0; i < slots.size(); ++i) {
      EXPECT_EQ(slots[i].offset % slots[i].alignment, 0u);
      EXPECT_LE(slots[i].offset + slots[i].bytes, total);
      for (size_t j = i + 1; j < slots.size(); ++j) {
        const SlotPlacement &a = slots[i], &b = slots[j];
        const bool live_together = a.first <= b.last && b.first <= a.last;
        const bool share = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
        EXPECT_FALSE(live_together && share) << "round " << round << ", slots " << i << ", " << j;
      }
    }
  }
}

// y = sum(relu(x w)) and its gradient with respect to w: a replay on new inputs gives exactly
// what the eager function gives on them, and allocates no intermediate.
TEST(FunctionTest, ReplayEqualsEagerOnNewInputs) {
  autodiff::Variable w(RandomTensor({8, 16}, 1), "w");
  auto fn = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(in[0], w.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(r));
    SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(y, std::vector<autodiff::Variable*>{&w}));
    return std::vector<Tensor>{y, *grads[0]};
  };
  Function traced(fn, {.name = "relu_sum"});
  for (uint32_t step = 0; step < 4; ++step) {
    const Tensor x = RandomTensor({128, 8}, 10 + step);
    absl::StatusOr<std::vector<Tensor>> want = fn({x});
    ASSERT_TRUE(want.ok()) << want.status();
    const int64_t reuses = backend::cpu::CpuAllocator::reuses();
    const size_t live = backend::cpu::CpuAllocator::live_bytes();
    absl::StatusOr<std::vector<Tensor>> got = traced({x});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), 2u);
    EXPECT_TRUE((*got)[0].Equals((*want)[0])) << step;
    EXPECT_TRUE((*got)[1].Equals((*want)[1])) << step;
    if (step > 0) {
      // A replay takes nothing from the allocator: the intermediates live in the arena.
      EXPECT_EQ(backend::cpu::CpuAllocator::reuses(), reuses) << step;
      EXPECT_EQ(backend::cpu::CpuAllocator::live_bytes(), live) << step;
    }
  }
  EXPECT_EQ(traced.traces_made(), 1);
  EXPECT_EQ(traced.replays(), 3);
  EXPECT_GT(traced.arena_bytes(), 0u);
}

// A new shape retraces with a warning naming what changed; a smaller first dimension (an
// epoch's last batch) runs eagerly without one, or gets its own trace when asked.
TEST(FunctionTest, RetracesWithAWarningAndRunsPartialBatchesEagerly) {
  std::vector<std::string> warnings;
  int host_calls = 0;  // host code runs only while tracing (tf.function's pitfall)
  auto fn = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    ++host_calls;
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Relu(in[0]));
    return std::vector<Tensor>{y};
  };
  Function traced(fn,
                  {.name = "relu", .warn = [&](const std::string& w) { warnings.push_back(w); }});
  ASSERT_TRUE(traced({RandomTensor({64, 4}, 1)}).ok());
  ASSERT_TRUE(traced({RandomTensor({64, 4}, 2)}).ok());
  EXPECT_EQ(host_calls, 1);
  // The last batch of an epoch: eager, no trace, no warning.
  absl::StatusOr<std::vector<Tensor>> partial = traced({RandomTensor({37, 4}, 3)});
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ((*partial)[0].shape(), Shape({37, 4}));
  EXPECT_EQ(traced.eager_calls(), 1);
  EXPECT_EQ(traced.traces_made(), 1);
  EXPECT_TRUE(warnings.empty());
  // Another feature size is a retrace, and the warning says what changed.
  ASSERT_TRUE(traced({RandomTensor({64, 5}, 4)}).ok());
  EXPECT_EQ(traced.traces_made(), 2);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("Function 'relu': retracing (trace 2): dimension 1 4 -> 5 at input 0"),
            std::string::npos)
      << warnings[0];
  // The first signature is still kept and replays.
  ASSERT_TRUE(traced({RandomTensor({64, 4}, 5)}).ok());
  EXPECT_EQ(traced.traces_made(), 2);
  EXPECT_EQ(host_calls, 3);  // two traces and one eager call

  Function own(fn, {.name = "own",
                    .partial_batch = PartialBatch::kTrace,
                    .warn = [&](const std::string& w) { warnings.push_back(w); }});
  ASSERT_TRUE(own({RandomTensor({64, 4}, 1)}).ok());
  ASSERT_TRUE(own({RandomTensor({37, 4}, 1)}).ok());
  ASSERT_TRUE(own({RandomTensor({37, 4}, 2)}).ok());
  EXPECT_EQ(own.traces_made(), 2);
  EXPECT_EQ(own.replays(), 1);
  EXPECT_EQ(warnings.size(), 1u);  // a partial batch is no surprise
}

TEST(FunctionTest, KeepsAtMostMaxTraces) {
  std::vector<std::string> warnings;
  Function traced(
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Relu(in[0]));
        return std::vector<Tensor>{y};
      },
      {.max_traces = 2, .warn = [&](const std::string& w) { warnings.push_back(w); }});
  for (int64_t n : {4, 5, 6}) ASSERT_TRUE(traced({RandomTensor({n, n}, 1)}).ok());
  EXPECT_EQ(traced.traces_kept(), 2);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.back().find("over FunctionOptions::max_traces (2)"), std::string::npos)
      << warnings.back();
}

// What a replay could not repeat is refused while tracing, with the reason.
TEST(FunctionTest, RefusesWhatAReplayWouldGetWrong) {
  const Tensor x = RandomTensor({4, 4}, 1);
  auto expect_refused = [&](Function::Fn fn, const std::string& reason) {
    Function traced(std::move(fn), {.name = "bad"});
    absl::StatusOr<std::vector<Tensor>> out = traced({x});
    ASSERT_FALSE(out.ok()) << reason;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(out.status().message().find("Function 'bad', while tracing: cannot trace this step"),
              std::string::npos)
        << out.status();
    EXPECT_NE(out.status().message().find(reason), std::string::npos) << out.status();
    EXPECT_EQ(traced.traces_made(), 0);
  };
  // A step that calls `call` on its input's backend.
  auto calling = [](std::function<absl::Status(backend::Backend&)> call) {
    return [call](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
      SLUICE_ASSIGN_OR_RETURN(backend::Backend * b, backend::BackendFor(in[0].device()));
      SLUICE_RETURN_IF_ERROR(call(*b));
      return in;
    };
  };
  // A host read: waiting for the device to read a value.
  expect_refused(calling([](backend::Backend& b) { return b.Synchronize(); }), "Synchronize");
  // Ordering another library's queue (DLPack's exchange): a replay would not repeat it.
  expect_refused(calling([](backend::Backend& b) { return b.OrderQueueAfterThis(1); }),
                 "orders another library's queue");
  expect_refused(calling([](backend::Backend& b) { return b.OrderThisAfterQueue(1); }),
                 "after another library's queue");
  // A Dropout op called directly has no seed source: every replay would repeat its mask.
  expect_refused(
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Dropout(in[0], {.rate = 0.5f, .seed = 7}));
        return std::vector<Tensor>{y};
      },
      "Dropout kernel whose seed has no source");
  // An optimizer update inside: its learning rate is a host value of each step.
  autodiff::Variable w(RandomTensor({4, 4}, 2), "w");
  optimizers::Sgd sgd;
  expect_refused(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_RETURN_IF_ERROR(sgd.Apply({in[0]}, {&w}));
        return in;
      },
      "applies an optimizer (Optimizer::Apply)");
  // Its host half inside: the step's scalars would be written once, and replayed frozen.
  expect_refused(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_RETURN_IF_ERROR(sgd.PrepareStep({&w}));
        return in;
      },
      "calls Optimizer::PrepareStep");
  EXPECT_EQ(sgd.iterations(), 0);
  // Its device half for a variable PrepareStep has not seen: the slots would be made inside.
  optimizers::Sgd momentum({.momentum = 0.9f});
  Function update(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_RETURN_IF_ERROR(momentum.UpdateVariables({in[0]}, {&w}));
        return in;
      },
      {.name = "update"});
  absl::StatusOr<std::vector<Tensor>> unprepared = update({x});
  ASSERT_FALSE(unprepared.ok());
  EXPECT_NE(unprepared.status().message().find(
                "variable 'w' has no slots yet (call PrepareStep with it first)"),
            std::string::npos)
      << unprepared.status();
  // A host read of a value the step computes: on the CPU it reached no backend call, so a
  // replay kept the trace's value (a metric adding the first batch's sum at every step).
  expect_refused(
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(in[0]));
        SLUICE_ASSIGN_OR_RETURN(float value, backend::ReadScalar(sum));
        (void)value;
        return std::vector<Tensor>{sum};
      },
      "reads a value it computes on the host");
}

// A host tensor the step makes itself (a constant) may be read; only values the step computes
// are refused. The check looked a Buffer up by its address alone, and a freed intermediate's
// Buffer leaves its address to the next allocation of its size: the constant made right after
// one was refused.
TEST(FunctionTest, AConstantMadeAfterAFreedIntermediateMayBeRead) {
  const Tensor x = RandomTensor({8, 8}, 5);
  Function f(
      [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        for (int i = 0; i < 20; ++i) {
          {
            SLUICE_ASSIGN_OR_RETURN(Tensor dead, ops::Sum(in[0]));  // freed at once
          }
          const Tensor constant = Tensor::Scalar<float>(static_cast<float>(i));
          SLUICE_ASSIGN_OR_RETURN(float value, backend::ReadScalar(constant));
          if (value != static_cast<float>(i)) return absl::InternalError("wrong constant");
        }
        SLUICE_ASSIGN_OR_RETURN(Tensor sum, ops::Sum(in[0]));
        return std::vector<Tensor>{sum};
      },
      {.name = "constants"});
  for (int call = 0; call < 2; ++call) {
    absl::StatusOr<std::vector<Tensor>> out = f({x});
    ASSERT_TRUE(out.ok()) << "call " << call << ": " << out.status();
  }
  EXPECT_EQ(f.traces_made(), 1);
}

// A Function called under a tape that records: the trace's ops would reach that tape (their
// backward functions holding the recorder, gone after the trace: a crash in Gradient), and a
// replay nothing at all. Refused.
TEST(FunctionTest, RefusesACallUnderARecordingTape) {
  autodiff::Variable w(RandomTensor({4, 4}, 3), "w");
  Function f(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::MatMul(in[0], w.value()));
        return std::vector<Tensor>{y};
      },
      {.name = "outer"});
  const Tensor x = RandomTensor({2, 4}, 4);
  {
    autodiff::Tape tape;
    absl::StatusOr<std::vector<Tensor>> y = f({x});
    ASSERT_FALSE(y.ok());
    EXPECT_EQ(y.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(y.status().message(), HasSubstr("called while a GradientTape records"));
  }
  EXPECT_TRUE(f({x}).ok());  // without the tape, as usual
}

// A lazy layer built by the first (traced) call: its variables are made outside the trace (as
// tf.function's init_scope), so replays train them on; made inside, every replay copied the
// initial weights back first.
TEST(FunctionTest, ALayerBuiltByTheTracedCallKeepsTrainingOnReplays) {
  auto train = [](bool compiled) {
    // Built by its first call; seeded, so that both runs start from the same weights.
    layers::Sequential model{layers::Flatten(), layers::Dense(3, layers::DenseOptions{.seed = 1})};
    const Tensor x = RandomTensor({4, 2, 2, 1}, 6);
    auto fn = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
      autodiff::Tape tape;
      SLUICE_ASSIGN_OR_RETURN(Tensor y, model.Forward(in[0], /*training=*/true));
      SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Sum(y));
      std::vector<autodiff::Variable*> vars = model.TrainableVariables();
      SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(loss, vars));
      SLUICE_ASSIGN_OR_RETURN(backend::Backend * b, backend::BackendFor(in[0].device()));
      for (size_t i = 0; i < vars.size(); ++i) {  // w -= 0.5 g, recorded as the step's own
        SLUICE_RETURN_IF_ERROR(b->Axpby(-0.5f, *grads[i], 1.0f, vars[i]->mutable_value()));
      }
      return std::vector<Tensor>{loss};
    };
    Function traced(fn, {.name = "lazy"});
    std::vector<float> losses;
    for (int step = 0; step < 3; ++step) {
      absl::StatusOr<std::vector<Tensor>> out = compiled ? traced({x}) : fn({x});
      EXPECT_TRUE(out.ok()) << out.status();
      if (out.ok()) losses.push_back((*out)[0].scalar<float>());
    }
    return losses;
  };
  const std::vector<float> eager = train(false), replayed = train(true);
  ASSERT_EQ(replayed.size(), 3u);
  EXPECT_EQ(replayed, eager);
  EXPECT_NE(replayed[2], replayed[1]);  // the weights moved between the replays
}

// The Dropout layer hands its seed source to the trace: each replay draws the mask the eager
// layer would have drawn at that call, and the layer's call count advances as eagerly.
TEST(FunctionTest, DropoutReplaysDrawNewMasksAsEagerWould) {
  layers::Dropout eager(0.5f, 9), compiled(0.5f, 9);
  Function traced([&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(Tensor y, compiled.Forward(in[0], /*training=*/true));
    return std::vector<Tensor>{y};
  });
  const Tensor x = RandomTensor({32, 32}, 4, 0.5f, 1.5f);
  Tensor first;
  for (int step = 0; step < 4; ++step) {
    absl::StatusOr<Tensor> want = eager.Forward(x, /*training=*/true);
    absl::StatusOr<std::vector<Tensor>> got = traced({x});
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_TRUE((*got)[0].Equals(*want)) << "step " << step;
    if (step == 0) {
      first = (*got)[0].Clone();
    } else {
      EXPECT_FALSE((*got)[0].Equals(first)) << "step " << step << " repeated the first mask";
    }
  }
  EXPECT_EQ(compiled.calls(), 4);
  EXPECT_EQ(traced.replays(), 3);
}

// One step of `eager` and of `traced` on the same input, a guarded copy of RandomTensor({32, 8},
// seed): the same outputs, bit for bit.
void ExpectTheSameStep(
    const std::function<absl::StatusOr<std::vector<Tensor>>(const Tensor&)>& eager,
    Function& traced, uint32_t seed) {
  absl::StatusOr<Tensor> x = backend::CopyTo(RandomTensor({32, 8}, seed), Device::Guarded());
  ASSERT_TRUE(x.ok()) << x.status();
  absl::StatusOr<std::vector<Tensor>> want = eager(*x);
  absl::StatusOr<std::vector<Tensor>> got = traced({*x});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t k = 0; k < want->size(); ++k) {
    absl::StatusOr<Tensor> a = backend::ToHost((*got)[k]), b = backend::ToHost((*want)[k]);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(a->Equals(*b)) << "output " << k;
  }
}

// On a backend that captures device graphs (the guarded test device, as CUDA), the first replay
// captures the calls on each side of a Dropout as two graphs, and later replays launch them, the
// Dropout drawing its new mask between them: the same values as the eager function, step by step.
// With FunctionOptions::device_graphs off, every call replays one by one.
TEST(FunctionTest, GuardedDeviceReplaysLaunchGraphsAroundHostWork) {
  testing::RegisterGuardedBackend();
  const Device guarded = Device::Guarded();
  for (const bool graphs : {true, false}) {
    SCOPED_TRACE(graphs ? "device graphs" : "call by call");
    absl::StatusOr<Tensor> w0 = backend::CopyTo(RandomTensor({8, 16}, 1), guarded);
    ASSERT_TRUE(w0.ok()) << w0.status();
    autodiff::Variable w_eager(*w0, "w"), w_traced(*w0, "w");
    layers::Dropout drop_eager(0.5f, 9), drop_traced(0.5f, 9);
    auto step = [](autodiff::Variable& w, layers::Dropout& drop,
                   const Tensor& x) -> absl::StatusOr<std::vector<Tensor>> {
      autodiff::Tape tape;
      SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(x, w.value()));
      SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(h));
      SLUICE_ASSIGN_OR_RETURN(Tensor d, drop.Forward(r, /*training=*/true));
      SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(d));
      SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(y, std::vector<autodiff::Variable*>{&w}));
      return std::vector<Tensor>{y, *grads[0]};
    };
    Function traced(
        [&](const std::vector<Tensor>& in) { return step(w_traced, drop_traced, in[0]); },
        {.name = "dropout_step", .device_graphs = graphs});
    const int64_t captured = testing::GuardedGraphsCaptured();
    const int64_t launches = testing::GuardedGraphLaunches();
    for (uint32_t i = 0; i < 4; ++i) {
      SCOPED_TRACE("step " + std::to_string(i));
      ExpectTheSameStep([&](const Tensor& x) { return step(w_eager, drop_eager, x); }, traced,
                        20 + i);
    }
    EXPECT_EQ(traced.replays(), 3);
    // Before the Dropout: MatMul and Relu; after it: the sum and the backward pass.
    EXPECT_EQ(traced.device_graphs(), graphs ? 2 : 0);
    EXPECT_EQ(testing::GuardedGraphsCaptured() - captured, graphs ? 2 : 0);
    EXPECT_EQ(testing::GuardedGraphLaunches() - launches, graphs ? 6 : 0);
  }
}

// A recomputed Dropout (Recompute) on a device whose trace leaves host code out of the replays
// (the guarded test device, as CUDA): the Dropout's call counter lives on the host, and the
// recomputation saves it, rewinds it to draw the forward pass's mask again, and restores it. Those
// host copies ran at the trace only, so every replay's recomputation drew the next mask (wrong
// gradients) and the counter moved 2 a step. They now run at every replay, in order.
TEST(FunctionTest, GuardedDeviceReplaysARecomputedDropoutWithTheForwardPassesMask) {
  testing::RegisterGuardedBackend();
  const Device guarded = Device::Guarded();
  absl::StatusOr<Tensor> w0 = backend::CopyTo(RandomTensor({8, 16}, 1), guarded);
  ASSERT_TRUE(w0.ok()) << w0.status();
  autodiff::Variable w_eager(*w0, "w"), w_traced(*w0, "w");
  layers::Dropout drop_eager(0.5f, 9), drop_traced(0.5f, 9);
  ASSERT_TRUE(drop_traced.built());
  auto step = [](autodiff::Variable& w, layers::Dropout& drop,
                 const Tensor& x) -> absl::StatusOr<std::vector<Tensor>> {
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(x, w.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(Tensor d,
                            layers::RecomputeGrad("drop", {&drop}, r, /*training=*/true,
                                                  [&drop](const Tensor& in, bool training) {
                                                    return drop.Forward(in, training);
                                                  }));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(d));
    SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(y, std::vector<autodiff::Variable*>{&w}));
    return std::vector<Tensor>{y, *grads[0]};
  };
  Function traced([&](const std::vector<Tensor>& in) { return step(w_traced, drop_traced, in[0]); },
                  {.name = "recomputed_dropout"});
  for (uint32_t i = 0; i < 4; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    ExpectTheSameStep([&](const Tensor& x) { return step(w_eager, drop_eager, x); }, traced,
                      40 + i);
    EXPECT_EQ(drop_traced.calls(), drop_eager.calls());
  }
  EXPECT_EQ(traced.replays(), 3);
  EXPECT_EQ(drop_eager.calls(), 4);
}

// A variable moved to new storage after the trace (Module::To to another device and back) would
// leave the replays updating its old buffer while the model reads the new one: the function
// drops its traces with a warning and traces again, and trains as eagerly.
TEST(FunctionTest, AVariableMovedSinceTheTraceRetraces) {
  testing::RegisterGuardedBackend();
  autodiff::Variable w_eager(RandomTensor({8, 4}, 1), "w"), w_traced(RandomTensor({8, 4}, 1), "w");
  auto step = [](autodiff::Variable& w, const Tensor& x) -> absl::StatusOr<std::vector<Tensor>> {
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(x, w.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(h));
    SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(y, std::vector<autodiff::Variable*>{&w}));
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * b, backend::BackendFor(x.device()));
    SLUICE_RETURN_IF_ERROR(b->Axpby(-0.125f, *grads[0], 1.0f, w.mutable_value()));
    return std::vector<Tensor>{y};
  };
  std::vector<std::string> warnings;
  Function traced([&](const std::vector<Tensor>& in) { return step(w_traced, in[0]); },
                  {.name = "moved", .warn = [&](const std::string& w) { warnings.push_back(w); }});
  for (uint32_t i = 0; i < 6; ++i) {
    if (i == 3) {  // to the guarded device and back: new host storage
      ASSERT_TRUE(w_traced.MoveTo(Device::Guarded()).ok());
      ASSERT_TRUE(w_traced.MoveTo(Device::Cpu()).ok());
    }
    const Tensor x = RandomTensor({16, 8}, 30 + i);
    absl::StatusOr<std::vector<Tensor>> want = step(w_eager, x);
    absl::StatusOr<std::vector<Tensor>> got = traced({x});
    ASSERT_TRUE(want.ok() && got.ok()) << got.status();
    EXPECT_TRUE((*got)[0].Equals((*want)[0])) << "step " << i;
    EXPECT_TRUE(w_traced.value().Equals(w_eager.value())) << "step " << i;
  }
  EXPECT_EQ(traced.traces_made(), 2);
  EXPECT_EQ(traced.replays(), 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("Function 'moved': variables moved to new storage "
                                     "(Module::To) since it was traced, perhaps its own; "
                                     "dropping its 1 trace(s)"));
}

// A move while another signature is traced keeps the new trace (made after the move) but drops
// the older ones, which read the old storage.
TEST(FunctionTest, AVariableMovedWhileTracingDropsTheOlderTraces) {
  testing::RegisterGuardedBackend();
  autodiff::Variable w(RandomTensor({8, 4}, 1), "w");
  bool move_next_trace = false;
  Function traced(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        if (move_next_trace) {  // host code: runs only while tracing
          move_next_trace = false;
          SLUICE_RETURN_IF_ERROR(w.MoveTo(Device::Guarded()));
          SLUICE_RETURN_IF_ERROR(w.MoveTo(Device::Cpu()));
        }
        SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(in[0], w.value()));
        SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(h));
        return std::vector<Tensor>{y};
      },
      {.partial_batch = PartialBatch::kTrace, .warn = [](const std::string&) {}});
  const Tensor x16 = RandomTensor({16, 8}, 3), x32 = RandomTensor({32, 8}, 4);
  ASSERT_TRUE(traced({x16}).ok());  // trace 1
  move_next_trace = true;
  ASSERT_TRUE(traced({x32}).ok());  // trace 2, moving w
  EXPECT_EQ(traced.traces_kept(), 1);
  ASSERT_TRUE(traced({x32}).ok());  // replays trace 2
  ASSERT_TRUE(w.Assign(RandomTensor({8, 4}, 9)).ok());
  absl::StatusOr<std::vector<Tensor>> got = traced({x16});  // traced again: reads the new w
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(traced.traces_made(), 3);
  EXPECT_EQ(traced.replays(), 1);
  absl::StatusOr<Tensor> h = ops::MatMul(x16, w.value());
  ASSERT_TRUE(h.ok());
  absl::StatusOr<Tensor> want = ops::Sum(*h);
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE((*got)[0].Equals(*want));
}

// An optimizer's update traced into the step (Optimizer::PrepareStep before each call,
// UpdateVariables inside it) reads the scalars PrepareStep wrote to the device at every replay,
// also from inside a device graph: AdamW's bias corrections change every step, its schedule every
// second one, and the bias, excluded from weight decay, reads a step tensor of its own. The
// variables equal those of eager Apply bit for bit; frozen scalars would not.
TEST(FunctionTest, TracedOptimizerUpdatesReadEachStepsScalars) {
  testing::RegisterGuardedBackend();
  const Device guarded = Device::Guarded();
  absl::StatusOr<Tensor> w0 = backend::CopyTo(RandomTensor({8, 16}, 1), guarded);
  absl::StatusOr<Tensor> b0 = backend::CopyTo(RandomTensor({16}, 2), guarded);
  ASSERT_TRUE(w0.ok() && b0.ok());
  struct Model {
    autodiff::Variable w, b;
    optimizers::AdamW adamw;
    std::vector<autodiff::Variable*> vars() { return {&w, &b}; }
  };
  auto make = [&](const Tensor& w, const Tensor& b) {
    absl::StatusOr<Tensor> wc = backend::Clone(w), bc = backend::Clone(b);
    EXPECT_TRUE(wc.ok() && bc.ok());
    // new: an aggregate holding an optimizer, which does not move.
    std::unique_ptr<Model> m(
        new Model{autodiff::Variable(*wc, "dense/kernel"), autodiff::Variable(*bc, "dense/bias"),
                  optimizers::AdamW(optimizers::StepDecay(0.01, 2, 0.5), {.weight_decay = 0.1f})});
    m->adamw.ExcludeFromWeightDecay({"bias"});
    return m;
  };
  std::unique_ptr<Model> eager = make(*w0, *b0), traced_model = make(*w0, *b0);
  auto gradients = [](Model& m,
                      const Tensor& x) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(x, m.w.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor hb, ops::Add(h, m.b.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(hb));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(r));
    return tape.Gradient(y, m.vars());
  };
  Function traced(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(auto grads, gradients(*traced_model, in[0]));
        SLUICE_RETURN_IF_ERROR(traced_model->adamw.UpdateVariables(grads, traced_model->vars()));
        return std::vector<Tensor>{};
      },
      {.name = "adamw_step"});
  const int64_t launches = testing::GuardedGraphLaunches();
  for (uint32_t i = 0; i < 5; ++i) {
    absl::StatusOr<Tensor> x = backend::CopyTo(RandomTensor({32, 8}, 60 + i), guarded);
    ASSERT_TRUE(x.ok()) << x.status();
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads = gradients(*eager, *x);
    ASSERT_TRUE(grads.ok()) << grads.status();
    ASSERT_TRUE(eager->adamw.Apply(*grads, eager->vars()).ok());
    ASSERT_TRUE(traced_model->adamw.PrepareStep(traced_model->vars()).ok());
    absl::StatusOr<std::vector<Tensor>> got = traced({*x});
    ASSERT_TRUE(got.ok()) << got.status();
    for (auto [a, b] : {std::pair{&eager->w, &traced_model->w}, {&eager->b, &traced_model->b}}) {
      absl::StatusOr<Tensor> want = backend::ToHost(a->value()), have = backend::ToHost(b->value());
      ASSERT_TRUE(want.ok() && have.ok());
      EXPECT_TRUE(have->Equals(*want)) << a->name() << " after step " << i;
    }
  }
  EXPECT_EQ(traced_model->adamw.iterations(), 5);
  EXPECT_EQ(traced.replays(), 4);
  // No host work in the step: one graph, launched by every replay after the capture.
  EXPECT_EQ(traced.device_graphs(), 1);
  EXPECT_EQ(testing::GuardedGraphLaunches() - launches, 4);
}

// A metric updated inside a traced function: refused until its running total is on the device
// (Metric::PrepareOn), then it adds each replay's batch on the device, and its count, a host
// number, comes back at every call (backend::AtEveryCall): the mean of 4 calls, as eagerly.
TEST(FunctionTest, MetricsUpdatedInATraceCountEveryCall) {
  metrics::Mean traced_mean("traced"), eager_mean("eager");
  auto update = [](metrics::Mean& mean, const Tensor& x) -> absl::StatusOr<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(x));
    SLUICE_RETURN_IF_ERROR(mean.Update(r));
    return std::vector<Tensor>{};
  };
  Function traced([&](const std::vector<Tensor>& in) { return update(traced_mean, in[0]); },
                  {.name = "mean"});
  absl::StatusOr<std::vector<Tensor>> refused = traced({RandomTensor({8, 4}, 1)});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find(
                "metric 'traced' is updated before its running total is on cpu"),
            std::string::npos)
      << refused.status();
  // Host numbers a metric adds itself (Accumulate(total, count)) come back at every call too.
  struct HostCount : metrics::Metric {
    HostCount() : Metric("host_count") {}
    void Add(double n) { Accumulate(n, 1); }
  } host_count;
  int calls = 0;
  Function counted(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        backend::AtEveryCall([&calls] { ++calls; });
        host_count.Add(static_cast<double>(in[0].dim(0)));
        return update(traced_mean, in[0]);
      },
      {.name = "mean"});
  for (uint32_t i = 0; i < 4; ++i) {
    const Tensor x = RandomTensor({8, 4}, 10 + i);
    ASSERT_TRUE(traced_mean.PrepareOn(Device::Cpu()).ok());
    ASSERT_TRUE(counted({x}).ok());
    ASSERT_TRUE(update(eager_mean, x).ok());
  }
  EXPECT_EQ(counted.traces_made(), 1);
  EXPECT_EQ(counted.replays(), 3);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(traced_mean.count(), 4 * 32);
  EXPECT_EQ(host_count.count(), 4);
  absl::StatusOr<double> host_total = host_count.total();
  ASSERT_TRUE(host_total.ok());
  EXPECT_EQ(*host_total, 4 * 8);
  absl::StatusOr<double> got = traced_mean.Result(), want = eager_mean.Result();
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(*got, *want);
  EXPECT_GT(*want, 0);
}

// A capture that fails leaves the replay to run call by call, that part and every part not yet
// captured (a later graph could freeze a workspace the failed part makes anew at each replay),
// with one warning that names the calls and the error; the values stay the eager ones.
TEST(FunctionTest, AFailedCaptureReplaysCallByCallWithOneWarning) {
  testing::RegisterGuardedBackend();
  const Device guarded = Device::Guarded();
  absl::StatusOr<Tensor> w0 = backend::CopyTo(RandomTensor({8, 16}, 1), guarded);
  ASSERT_TRUE(w0.ok()) << w0.status();
  autodiff::Variable w(*w0, "w");
  layers::Dropout drop_eager(0.5f, 9), drop_traced(0.5f, 9);
  auto step = [&](layers::Dropout& drop, const Tensor& x) -> absl::StatusOr<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(x, w.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(Tensor d, drop.Forward(r, /*training=*/true));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(d));
    return std::vector<Tensor>{y};
  };
  std::vector<std::string> warnings;
  Function traced([&](const std::vector<Tensor>& in) { return step(drop_traced, in[0]); },
                  {.name = "fails", .warn = [&](const std::string& m) { warnings.push_back(m); }});
  testing::FailGuardedCaptures(1);
  const int64_t captured = testing::GuardedGraphsCaptured();
  for (uint32_t i = 0; i < 4; ++i) {
    absl::StatusOr<Tensor> x = backend::CopyTo(RandomTensor({32, 8}, 40 + i), guarded);
    ASSERT_TRUE(x.ok()) << x.status();
    absl::StatusOr<std::vector<Tensor>> want = step(drop_eager, *x), got = traced({*x});
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<Tensor> a = backend::ToHost((*got)[0]), b = backend::ToHost((*want)[0]);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(a->Equals(*b)) << "step " << i;
  }
  testing::FailGuardedCaptures(0);
  EXPECT_EQ(traced.device_graphs(), 0);
  EXPECT_EQ(testing::GuardedGraphsCaptured(), captured);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("Function 'fails': capturing calls 0 to 1 (MatMul to Unary) as a "
                             "device graph: GuardedBackend: this capture fails"),
            std::string::npos)
      << warnings[0];
}

// A replay runs each kernel under the precision policy it was traced under, whatever the caller
// of the replay has set (Fit sets it around the forward pass only, and CUDA's kernels read it
// themselves): a matmul of float32 operands traced under mixed_bfloat16 replays in bfloat16
// outside the scope too. Skipped, visibly, on a CPU without bfloat16.
TEST(FunctionTest, ReplaysRunUnderThePrecisionTheyWereTracedUnder) {
  if (absl::Status s =
          backend::CheckPrecisionSupported(Device::Cpu(), backend::Precision::kMixedBFloat16);
      !s.ok()) {
    GTEST_SKIP() << s;
  }
  const Tensor w = RandomTensor({64, 48}, 2);
  // The backend's own matmul, on float32 operands: its kernel reads the policy.
  auto fn = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * b, backend::BackendFor(Device::Cpu()));
    SLUICE_ASSIGN_OR_RETURN(Tensor out, b->Allocate(DType::kFloat32, Shape{in[0].dim(0), 48}));
    SLUICE_RETURN_IF_ERROR(b->MatMul(in[0], false, w, false, out));
    return std::vector<Tensor>{out};
  };
  const Tensor x = RandomTensor({32, 64}, 3);
  absl::StatusOr<std::vector<Tensor>> f32 = fn({x});
  ASSERT_TRUE(f32.ok()) << f32.status();
  Function traced(fn);
  Tensor in_trace;
  {
    backend::ScopedPrecision scope(backend::Precision::kMixedBFloat16);
    absl::StatusOr<std::vector<Tensor>> t = traced({x});
    ASSERT_TRUE(t.ok()) << t.status();
    in_trace = (*t)[0].Clone();
  }
  ASSERT_FALSE(in_trace.Equals((*f32)[0])) << "bfloat16 products should round differently";
  absl::StatusOr<std::vector<Tensor>> replayed = traced({x});
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ(traced.replays(), 1);
  EXPECT_TRUE((*replayed)[0].Equals(in_trace));
  EXPECT_EQ(backend::CurrentPrecision(), backend::Precision::kFloat32);
}

// A cross-entropy's label check that is not deferred runs again after every replay: a replay's
// bad label is an error there too, not only the trace's (which alone ran the eager check before).
TEST(FunctionTest, AnUndeferredLabelCheckChecksEveryReplay) {
  Function traced([](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    SLUICE_ASSIGN_OR_RETURN(Tensor losses, ops::SparseSoftmaxCrossEntropyWithLogits(in[0], in[1]));
    return std::vector<Tensor>{losses};
  });
  const Tensor logits = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  ASSERT_TRUE(traced({logits, Tensor::FromVector<int64_t>({0, 2})}).ok());
  ASSERT_TRUE(traced({logits, Tensor::FromVector<int64_t>({1, 1})}).ok());
  EXPECT_EQ(traced.replays(), 1);
  const absl::StatusOr<std::vector<Tensor>> bad =
      traced({logits, Tensor::FromVector<int64_t>({1, 3})});
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("1 labels of this batch are outside [0, 3)"));
}

// The arena of a residual network's forward and backward passes, with the outputs kept out of
// it, needs no more memory than the eager step's peak; and planning hands the blocks the trace
// freed back to the system instead of holding them beside the arena.
TEST(FunctionTest, ArenaNeedsNoMoreThanTheEagerPeak) {
  absl::StatusOr<std::unique_ptr<layers::Module>> model =
      models::MakeModel("resnet-small", {.height = 32, .width = 32, .channels = 3, .classes = 10});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Build(Shape{1, 32, 32, 3}).ok());
  std::vector<int64_t> label_values(32);
  for (int64_t i = 0; i < 32; ++i) label_values[i] = i % 10;
  const Tensor labels = Tensor::FromVector(label_values);
  auto fn = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor logits, (*model)->Forward(in[0], /*training=*/true));
    SLUICE_ASSIGN_OR_RETURN(Tensor losses, ops::SparseSoftmaxCrossEntropyWithLogits(logits, in[1]));
    SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Mean(losses));
    SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(loss, (*model)->TrainableVariables()));
    std::vector<Tensor> out = {loss};
    for (auto& g : grads) out.push_back(*g);
    return out;
  };
  const Tensor x = RandomTensor({32, 32, 32, 3}, 6);
  using backend::cpu::CpuAllocator;
  {
    absl::StatusOr<std::vector<Tensor>> warm = fn({x, labels});  // oneDNN's primitives, once
    ASSERT_TRUE(warm.ok()) << warm.status();
  }
  const size_t base = CpuAllocator::live_bytes();
  CpuAllocator::ResetPeak();
  {
    absl::StatusOr<std::vector<Tensor>> eager = fn({x, labels});
    ASSERT_TRUE(eager.ok()) << eager.status();
  }
  const size_t eager_peak = CpuAllocator::peak_live_bytes() - base;
  Function traced(fn);
  absl::StatusOr<std::vector<Tensor>> out = traced({x, labels});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_TRUE(traced({x, labels}).ok());
  EXPECT_GT(traced.arena_bytes(), 0u);
  EXPECT_LE(traced.arena_bytes() + traced.pinned_bytes(), eager_peak)
      << "arena " << traced.arena_bytes() << " + outputs " << traced.pinned_bytes()
      << " bytes against the eager step's peak of " << eager_peak;
  EXPECT_EQ(CpuAllocator::cached_bytes(), 0u);
}

}  // namespace
}  // namespace sluice::train::function
