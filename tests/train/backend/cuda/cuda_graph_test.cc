// CudaBackend::Capture and a traced step's replay as CUDA graphs (train/function/program.h), on a
// real GPU; skipped, visibly, without one.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/backend/backend.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/transfer.h"
#include "train/function/function.h"
#include "train/layers/module.h"
#include "train/models/model_zoo.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/matmul.h"
#include "train/ops/reduce.h"
#include "train/optimizers/adamw.h"
#include "train/optimizers/learning_rate_schedule.h"

namespace sluice::train::backend::cuda {
namespace {

using ::testing::HasSubstr;

Tensor GraphTestRandom(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Tensor t(DType::kFloat32, shape);
  for (float& v : t.flat<float>()) v = u(rng);
  return t;
}

class CudaGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) {
      GTEST_SKIP() << "no CUDA device: CUDA graphs are captured and launched on a GPU";
    }
    absl::StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::Create(0, {});
    ASSERT_TRUE(backend.ok()) << backend.status();
    gpu_ = *std::move(backend);
  }
  // The value of a one-element tensor of gpu_, once gpu_'s queued work is done (its Copy to the
  // host waits for its stream; the shared backend's would not).
  float Read(const Tensor& t) {
    Tensor host(DType::kFloat32, Shape{1});
    const absl::Status copied = gpu_->Copy(t, host);
    EXPECT_TRUE(copied.ok()) << copied;
    return copied.ok() ? host.flat<float>()[0] : NAN;
  }
  Tensor Scalar(float value) {
    absl::StatusOr<Tensor> t = gpu_->Allocate(DType::kFloat32, Shape{1});
    EXPECT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(gpu_->Fill(*t, value).ok());
    return *t;
  }

  std::unique_ptr<CudaBackend> gpu_;
};

// A capture runs nothing; each launch runs the captured kernels once, with the addresses they
// were captured with.
TEST_F(CudaGraphTest, CaptureRunsNothingAndEachLaunchRunsTheKernelsOnce) {
  ASSERT_TRUE(gpu_->CapturesGraphs());
  Tensor x = Scalar(1.0f), y = Scalar(10.0f);
  absl::StatusOr<std::unique_ptr<DeviceGraph>> graph =
      gpu_->Capture([&] { return gpu_->Axpby(2.0f, x, 1.0f, y); });  // y += 2x
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_GE((*graph)->nodes(), 1u);
  EXPECT_EQ(Read(y), 10.0f);
  ASSERT_TRUE((*graph)->Launch().ok());
  ASSERT_TRUE((*graph)->Launch().ok());
  ASSERT_TRUE(gpu_->Fill(x, 100.0f).ok());  // a launch reads x as it is then
  ASSERT_TRUE((*graph)->Launch().ok());
  EXPECT_EQ(Read(y), 10.0f + 2.0f + 2.0f + 200.0f);
}

// Memory allocated while capturing is the graph's: an allocation after the capture never gets a
// block the graph's kernels write, even after the captured code dropped it, and EmptyCache keeps
// it. Destroying the graph gives the blocks back.
TEST_F(CudaGraphTest, BlocksAllocatedWhileCapturingStayTheGraphs) {
  Tensor out = Scalar(0.0f);
  const Shape shape{1 << 16};
  const void* scratch = nullptr;
  absl::StatusOr<std::unique_ptr<DeviceGraph>> graph = gpu_->Capture([&]() -> absl::Status {
    SLUICE_ASSIGN_OR_RETURN(Tensor t, gpu_->Allocate(DType::kFloat32, shape));
    scratch = t.raw_data();
    SLUICE_RETURN_IF_ERROR(gpu_->Fill(t, 0.5f));
    return gpu_->Reduce(ReduceOp::kSum, t, {true}, 1.0f, out);  // t is dropped here
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(gpu_->ReleaseCachedMemory().ok());
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<Tensor> other = gpu_->Allocate(DType::kFloat32, shape);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_NE(other->raw_data(), scratch) << "allocation " << i;
    ASSERT_TRUE(gpu_->Fill(*other, 7.0f).ok());
  }
  ASSERT_TRUE((*graph)->Launch().ok());
  EXPECT_EQ(Read(out), 0.5f * (1 << 16));
  graph->reset();
  // The cache hands out its newest block first: the graph's, given back to the backend's stream.
  absl::StatusOr<Tensor> after = gpu_->Allocate(DType::kFloat32, shape);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->raw_data(), scratch);
}

// Emptying the cache waits for the device, which would invalidate a capture under way: another
// thread's EmptyCache waits for the capture to end, and the capturing thread's own is refused
// with a message (the capture goes on).
TEST_F(CudaGraphTest, EmptyingTheCacheDuringACaptureLeavesTheCaptureWhole) {
  Tensor y = Scalar(1.0f);
  absl::Status from_thread, on_capturing_thread;
  std::thread other;
  absl::StatusOr<std::unique_ptr<DeviceGraph>> graph = gpu_->Capture([&]() -> absl::Status {
    SLUICE_RETURN_IF_ERROR(gpu_->Axpby(1.0f, y, 1.0f, y));  // y *= 2
    other = std::thread([&] { from_thread = gpu_->ReleaseCachedMemory(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let it reach the wait
    on_capturing_thread = gpu_->ReleaseCachedMemory();
    return gpu_->Axpby(1.0f, y, 1.0f, y);
  });
  other.join();
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(from_thread.ok()) << from_thread;
  EXPECT_EQ(on_capturing_thread.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(on_capturing_thread.message()), HasSubstr("capturing a CUDA graph"));
  EXPECT_EQ(Read(y), 1.0f);
  ASSERT_TRUE((*graph)->Launch().ok());
  EXPECT_EQ(Read(y), 4.0f);
}

// Only the capturing thread's calls are captured: another thread's kernel, queued meanwhile on
// the same backend, runs at once.
TEST_F(CudaGraphTest, AnotherThreadsCallsAreNotCaptured) {
  Tensor captured = Scalar(0.0f), other = Scalar(0.0f);
  absl::StatusOr<std::unique_ptr<DeviceGraph>> graph = gpu_->Capture([&]() -> absl::Status {
    absl::Status from_thread;
    std::thread t([&] { from_thread = gpu_->Fill(other, 3.0f); });
    t.join();
    SLUICE_RETURN_IF_ERROR(from_thread);
    return gpu_->Fill(captured, 5.0f);
  });
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(Read(other), 3.0f);
  EXPECT_EQ(Read(captured), 0.0f);
  ASSERT_TRUE((*graph)->Launch().ok());
  EXPECT_EQ(Read(captured), 5.0f);
}

// A host read inside a capture fails the capture with CUDA's error, and the backend goes on.
TEST_F(CudaGraphTest, AHostReadFailsTheCaptureAndTheBackendGoesOn) {
  Tensor x = Scalar(4.0f);
  Tensor host(DType::kFloat32, Shape{1});
  absl::StatusOr<std::unique_ptr<DeviceGraph>> graph =
      gpu_->Capture([&] { return gpu_->Copy(x, host); });
  EXPECT_FALSE(graph.ok());
  ASSERT_TRUE(gpu_->Fill(x, 6.0f).ok());
  EXPECT_EQ(Read(x), 6.0f);
}

// A model's forward and backward pass traced on cuda:0: replays launch CUDA graphs, and each
// gives what the eager pass of a twin model (same seed: the cnn's Dropout draws the same masks)
// gives on the same inputs; cuDNN's backward algorithms may sum in any order, so within float32
// rounding of a sum over the batch.
TEST_F(CudaGraphTest, ReplayedModelStepsMatchEager) {
  const Device cuda = Device::Cuda(0);
  for (const std::string name : {"cnn", "resnet-20"}) {
    SCOPED_TRACE(name);
    std::unique_ptr<layers::Module> models[2];
    for (auto& model : models) {
      absl::StatusOr<std::unique_ptr<layers::Module>> made =
          models::MakeModel(name, {.height = 16, .width = 16, .channels = 1, .classes = 10}, 3);
      ASSERT_TRUE(made.ok()) << made.status();
      model = *std::move(made);
      ASSERT_TRUE(model->Build(Shape{1, 16, 16, 1}).ok());
      ASSERT_TRUE(model->To(cuda).ok());
    }
    auto step = [](layers::Module& model,
                   const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
      autodiff::Tape tape;
      SLUICE_ASSIGN_OR_RETURN(Tensor logits, model.Forward(in[0], /*training=*/true));
      SLUICE_ASSIGN_OR_RETURN(Tensor losses,
                              ops::SparseSoftmaxCrossEntropyWithLogits(logits, in[1]));
      SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Mean(losses));
      SLUICE_ASSIGN_OR_RETURN(auto grads, tape.Gradient(loss, model.TrainableVariables()));
      std::vector<Tensor> out = {loss};
      for (auto& g : grads) out.push_back(*g);
      return out;
    };
    auto fn = [&](const std::vector<Tensor>& in) { return step(*models[0], in); };
    std::vector<std::string> warnings;
    function::Function traced(
        [&](const std::vector<Tensor>& in) { return step(*models[1], in); },
        {.name = name, .warn = [&](const std::string& w) { warnings.push_back(w); }});
    std::vector<int64_t> label_values(32);
    for (int64_t i = 0; i < 32; ++i) label_values[i] = (i * 7) % 10;
    absl::StatusOr<Tensor> labels = CopyTo(Tensor::FromVector(label_values), cuda);
    ASSERT_TRUE(labels.ok()) << labels.status();
    for (uint32_t step = 0; step < 5; ++step) {
      absl::StatusOr<Tensor> x = CopyTo(GraphTestRandom(Shape{32, 16, 16, 1}, 50 + step), cuda);
      ASSERT_TRUE(x.ok()) << x.status();
      absl::StatusOr<std::vector<Tensor>> want = fn({*x, *labels});
      absl::StatusOr<std::vector<Tensor>> got = traced({*x, *labels});
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want->size());
      for (size_t k = 0; k < got->size(); ++k) {
        absl::StatusOr<Tensor> g = ToHost((*got)[k]), w = ToHost((*want)[k]);
        ASSERT_TRUE(g.ok() && w.ok());
        auto gv = g->flat<float>(), wv = w->flat<float>();
        for (size_t i = 0; i < gv.size(); ++i) {
          ASSERT_NEAR(gv[i], wv[i], 1e-5f + 1e-4f * std::fabs(wv[i]))
              << "step " << step << ", output " << k << ", element " << i;
        }
      }
    }
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    EXPECT_EQ(traced.replays(), 4);
    EXPECT_GE(traced.device_graphs(), 1);
  }
}

// The optimizer's update inside the graph (Optimizer::PrepareStep before each launch,
// UpdateVariables traced): AdamW's bias corrections change every step and its schedule every
// second one, and the graph's kernels read them from device memory, so its variables follow a
// twin's eager Apply. A frozen learning rate would drift from it after the first replay. The
// same kernels on the same values: equal within float32 rounding of cuBLAS's sums.
TEST_F(CudaGraphTest, GraphedOptimizerUpdatesReadEachStepsScalars) {
  const Device cuda = Device::Cuda(0);
  struct Twin {
    autodiff::Variable w, b;
    optimizers::AdamW adamw;
    std::vector<autodiff::Variable*> vars() { return {&w, &b}; }
  };
  std::unique_ptr<Twin> twins[2];
  for (auto& twin : twins) {
    absl::StatusOr<Tensor> w = CopyTo(GraphTestRandom(Shape{8, 16}, 1), cuda);
    absl::StatusOr<Tensor> b = CopyTo(GraphTestRandom(Shape{16}, 2), cuda);
    ASSERT_TRUE(w.ok() && b.ok());
    twin.reset(
        new Twin{autodiff::Variable(*w, "dense/kernel"), autodiff::Variable(*b, "dense/bias"),
                 optimizers::AdamW(optimizers::StepDecay(0.01, 2, 0.5), {.weight_decay = 0.1f})});
    twin->adamw.ExcludeFromWeightDecay({"bias"});
  }
  auto gradients = [](Twin& t,
                      const Tensor& x) -> absl::StatusOr<std::vector<std::optional<Tensor>>> {
    autodiff::Tape tape;
    SLUICE_ASSIGN_OR_RETURN(Tensor h, ops::MatMul(x, t.w.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor hb, ops::Add(h, t.b.value()));
    SLUICE_ASSIGN_OR_RETURN(Tensor r, ops::Relu(hb));
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::Sum(r));
    return tape.Gradient(y, t.vars());
  };
  Twin& eager = *twins[0];
  Twin& graphed = *twins[1];
  function::Function traced(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(auto grads, gradients(graphed, in[0]));
        SLUICE_RETURN_IF_ERROR(graphed.adamw.UpdateVariables(grads, graphed.vars()));
        return std::vector<Tensor>{};
      },
      {.name = "adamw_step"});
  for (uint32_t step = 0; step < 6; ++step) {
    absl::StatusOr<Tensor> x = CopyTo(GraphTestRandom(Shape{32, 8}, 70 + step), cuda);
    ASSERT_TRUE(x.ok()) << x.status();
    absl::StatusOr<std::vector<std::optional<Tensor>>> grads = gradients(eager, *x);
    ASSERT_TRUE(grads.ok()) << grads.status();
    ASSERT_TRUE(eager.adamw.Apply(*grads, eager.vars()).ok());
    ASSERT_TRUE(graphed.adamw.PrepareStep(graphed.vars()).ok());
    absl::StatusOr<std::vector<Tensor>> out = traced({*x});
    ASSERT_TRUE(out.ok()) << out.status();
    for (auto [want_var, got_var] :
         {std::pair{&eager.w, &graphed.w}, std::pair{&eager.b, &graphed.b}}) {
      absl::StatusOr<Tensor> want = ToHost(want_var->value()), got = ToHost(got_var->value());
      ASSERT_TRUE(want.ok() && got.ok());
      auto wv = want->flat<float>(), gv = got->flat<float>();
      for (size_t i = 0; i < wv.size(); ++i) {
        ASSERT_NEAR(gv[i], wv[i], 1e-6f + 1e-5f * std::fabs(wv[i]))
            << want_var->name() << " after step " << step << ", element " << i;
      }
    }
  }
  EXPECT_EQ(traced.replays(), 5);
  EXPECT_EQ(traced.device_graphs(), 1);
}

}  // namespace
}  // namespace sluice::train::backend::cuda
