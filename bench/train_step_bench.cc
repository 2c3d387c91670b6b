// One training step (forward, tape gradient, optimizer update) at batch 64 on
// 28x28x1 inputs, for the two models of issue 6's throughput goal, built from
// train/ ops and variables directly, and for resnet-small and resnet-20 as
// `sluice train` builds them (train/models/model_zoo.h). Reports images/s; compare with
// bench/compare_pytorch_train.sh. Threads: SLUICE_THREADS (default 2, the
// goal's setting). On a machine shared with other work, run with
// OMP_WAIT_POLICY=passive (as the comparison script does): libgomp's spinning
// otherwise starves the 2-thread oneDNN team.
//
// --onnx=FILE --size=N adds train_step/onnx/{sgd,adam}: the model ImportOnnx makes of FILE at
// NxNx3 (issue 47's goal: torchvision's ResNet-18 at 224, batch 32, against PyTorch's on the same
// architecture, bench/compare_pytorch_train.sh).
//
// --updates adds the optimizer's update alone, one pass against one call per variable.
//
// --batch=N changes the batch; --device=cuda[:N] runs the steps on a GPU (the model and the
// batch copied there first; each timed step ends with the device's Synchronize, so a step is the
// device's time, as PyTorch's side times it: tools/device_check.sh).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/backend/backend.h"
#include "train/backend/compute_precision.h"
#include "train/backend/cpu/cpu_threads.h"
#include "train/backend/trace_hooks.h"
#include "train/backend/transfer.h"
#include "train/function/function.h"
#include "train/import/onnx_import.h"
#include "train/layers/initializers.h"
#include "train/layers/model.h"
#include "train/models/model_zoo.h"
#include "train/ops/activations.h"
#include "train/ops/arithmetic.h"
#include "train/ops/conv2d.h"
#include "train/ops/cross_entropy.h"
#include "train/ops/dropout.h"
#include "train/ops/matmul.h"
#include "train/ops/pool.h"
#include "train/ops/reduce.h"
#include "train/ops/reshape.h"
#include "train/optimizers/adam.h"
#include "train/optimizers/sgd.h"

namespace sluice::train {
namespace {

// --batch, --device, --onnx and --size.
int64_t bench_batch = 64;
Device bench_device = Device::Cpu();
std::string bench_onnx;
int64_t bench_size = 224;

struct Dense {
  Dense(int64_t in, int64_t out, uint64_t seed)
      : kernel(layers::Initialize(layers::Initializer::kGlorotUniform, Shape{in, out}, seed)),
        bias(layers::Initialize(layers::Initializer::kZeros, Shape{out})) {}
  absl::StatusOr<Tensor> operator()(const Tensor& x) {
    SLUICE_ASSIGN_OR_RETURN(Tensor y, ops::MatMul(x, kernel.value()));
    return ops::Add(y, bias.value());
  }
  autodiff::Variable kernel, bias;
};

struct Conv {
  Conv(int64_t in, int64_t out, uint64_t seed)
      : kernel(layers::Initialize(layers::Initializer::kGlorotUniform, Shape{5, 5, in, out}, seed)),
        bias(layers::Initialize(layers::Initializer::kZeros, Shape{out})) {}
  absl::StatusOr<Tensor> operator()(const Tensor& x) {
    // The bias inside the convolution's kernels, as the Conv2D layer adds it.
    return ops::Conv2D(x, kernel.value(), bias.value(), {.padding = ops::Padding::kSame});
  }
  autodiff::Variable kernel, bias;
};

// mlp 784-256-128-100-10 with ReLU.
// Moves the variables of a model built from train/ ops to `device`.
absl::Status MoveVariables(const std::vector<autodiff::Variable*>& variables,
                           const Device& device) {
  for (autodiff::Variable* v : variables) SLUICE_RETURN_IF_ERROR(v->MoveTo(device));
  return absl::OkStatus();
}

struct Mlp {
  Dense d1{784, 256, 1}, d2{256, 128, 2}, d3{128, 100, 3}, d4{100, 10, 4};
  absl::Status To(const Device& device) { return MoveVariables(variables(), device); }
  Shape input_shape() const { return Shape{bench_batch, 784}; }
  std::vector<autodiff::Variable*> variables() {
    return {&d1.kernel, &d1.bias, &d2.kernel, &d2.bias, &d3.kernel, &d3.bias, &d4.kernel, &d4.bias};
  }
  absl::StatusOr<Tensor> Forward(const Tensor& x) {
    SLUICE_ASSIGN_OR_RETURN(Tensor h, d1(x));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(h, d2(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(h, d3(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Relu(h));
    return d4(h);
  }
};

// TensorFlow's layers tutorial CNN.
struct Cnn {
  Conv c1{1, 32, 1}, c2{32, 64, 2};
  Dense d1{7 * 7 * 64, 1024, 3}, d2{1024, 10, 4};
  uint64_t dropout_seed = 0;
  absl::Status To(const Device& device) { return MoveVariables(variables(), device); }
  Shape input_shape() const { return Shape{bench_batch, 28, 28, 1}; }
  std::vector<autodiff::Variable*> variables() {
    return {&c1.kernel, &c1.bias, &c2.kernel, &c2.bias, &d1.kernel, &d1.bias, &d2.kernel, &d2.bias};
  }
  absl::StatusOr<Tensor> Forward(const Tensor& x) {
    SLUICE_ASSIGN_OR_RETURN(Tensor h, c1(x));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::MaxPool2D(h));
    SLUICE_ASSIGN_OR_RETURN(h, c2(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Relu(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::MaxPool2D(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Flatten(h));
    SLUICE_ASSIGN_OR_RETURN(h, d1(h));
    SLUICE_ASSIGN_OR_RETURN(h, ops::Relu(h));
    // A compiled step draws each replay's seed from here, as the Dropout layer does.
    backend::SetNextDropoutSeedSource(
        [this]() -> absl::StatusOr<uint64_t> { return dropout_seed++; });
    SLUICE_ASSIGN_OR_RETURN(h, ops::Dropout(h, {.rate = 0.4f, .seed = dropout_seed++}));
    return d2(h);
  }
};

// A model of train/models/model_zoo.h as `sluice train` builds it, in training mode.
class ZooModel {
 public:
  explicit ZooModel(const char* name)
      : module_(*models::MakeModel(name, models::ModelShape{}, 1)) {}
  Shape input_shape() const { return Shape{bench_batch, 28, 28, 1}; }
  // Batch norm's moving statistics too.
  absl::Status To(const Device& device) { return module_->To(device); }
  std::vector<autodiff::Variable*> variables() { return module_->TrainableVariables(); }
  absl::StatusOr<Tensor> Forward(const Tensor& x) { return module_->Forward(x, /*training=*/true); }

 private:
  std::unique_ptr<layers::Module> module_;
};

// The model of --onnx, imported at --size (a pretrained base trained on, as in fine-tuning).
class OnnxModel {
 public:
  OnnxModel() {
    absl::StatusOr<std::unique_ptr<layers::Model>> model =
        importing::ImportOnnx(bench_onnx, {.height = bench_size, .width = bench_size});
    if (!model.ok()) {
      std::fprintf(stderr, "train_step_bench: %s\n", model.status().ToString().c_str());
      std::exit(1);
    }
    module_ = *std::move(model);
  }
  Shape input_shape() const { return Shape{bench_batch, bench_size, bench_size, 3}; }
  absl::Status To(const Device& device) { return module_->To(device); }
  std::vector<autodiff::Variable*> variables() { return module_->TrainableVariables(); }
  absl::StatusOr<Tensor> Forward(const Tensor& x) { return module_->Forward(x, /*training=*/true); }

 private:
  std::unique_ptr<layers::Model> module_;
};

// Batch norm and three residual blocks.
struct ResNetSmall : ZooModel {
  ResNetSmall() : ZooModel("resnet-small") {}
};

// Nine residual blocks, about resnet-small's multiply-adds.
struct ResNet20 : ZooModel {
  ResNet20() : ZooModel("resnet-20") {}
};

// The step's forward and backward passes: the gradient of every variable (an empty tensor for
// none), which the optimizer then applies.
template <typename Model>
absl::StatusOr<std::vector<Tensor>> ForwardBackward(Model& model, const Tensor& x,
                                                    const Tensor& labels) {
  autodiff::Tape tape;
  SLUICE_ASSIGN_OR_RETURN(Tensor logits, model.Forward(x));
  // The label check deferred, as Fit defers it (it reads one number per many steps), and dropped:
  // the bench's labels are in range by construction. Checked at once, it would read the device
  // in every step, and end a CUDA graph there.
  ops::LabelRangeCheck unchecked;
  SLUICE_ASSIGN_OR_RETURN(Tensor losses,
                          ops::SparseSoftmaxCrossEntropyWithLogits(logits, labels, &unchecked));
  SLUICE_ASSIGN_OR_RETURN(Tensor loss, ops::Mean(losses));
  std::vector<Tensor> sources;
  for (autodiff::Variable* v : model.variables()) sources.push_back(v->value());
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::optional<Tensor>> grads, tape.Gradient(loss, sources));
  std::vector<Tensor> out;
  for (std::optional<Tensor>& g : grads) out.push_back(g ? *std::move(g) : Tensor());
  return out;
}

std::vector<std::optional<Tensor>> Gradients(const std::vector<Tensor>& grads) {
  std::vector<std::optional<Tensor>> g;
  for (const Tensor& t : grads) g.push_back(t.buffer() ? std::optional<Tensor>(t) : std::nullopt);
  return g;
}

absl::Status Apply(optimizers::Optimizer& optimizer, const std::vector<Tensor>& grads,
                   const std::vector<autodiff::Variable*>& vars) {
  return optimizer.Apply(Gradients(grads), vars);
}

absl::Status UpdateVariables(optimizers::Optimizer& optimizer, const std::vector<Tensor>& grads,
                             const std::vector<autodiff::Variable*>& vars) {
  return optimizer.UpdateVariables(Gradients(grads), vars);
}

int BenchThreads() {
  const char* env = std::getenv("SLUICE_THREADS");
  return env != nullptr ? std::atoi(env) : 2;
}

// How a step runs: op by op; traced and replayed (as CUDA graphs where the backend captures
// them); traced and replayed call by call (FunctionOptions::device_graphs = false).
enum class Mode { kEager, kCompiled, kCompiledNoGraphs };
// --mode's names; a compiled mode's name also ends its benchmarks' names.
constexpr std::pair<Mode, absl::string_view> kModeNames[] = {
    {Mode::kEager, "eager"},
    {Mode::kCompiled, "compiled"},
    {Mode::kCompiledNoGraphs, "compiled_no_graphs"},
};

absl::string_view NameOf(Mode mode) {
  for (const auto& [m, name] : kModeNames) {
    if (m == mode) return name;
  }
  return "";
}

// A batch of random images and labels on --device, the model moved there too.
struct DeviceBatch {
  backend::Backend* backend = nullptr;
  Tensor x, labels;
};
template <typename Model>
absl::StatusOr<DeviceBatch> OnDevice(Model& model) {
  std::mt19937 rng(7);
  Tensor x(DType::kFloat32, model.input_shape());
  for (float& v : x.flat<float>()) v = static_cast<float>(rng() >> 8) / static_cast<float>(1 << 24);
  Tensor labels(DType::kInt64, Shape{bench_batch});
  for (int64_t& l : labels.flat<int64_t>()) l = static_cast<int64_t>(rng() % 10);
  DeviceBatch batch;
  SLUICE_ASSIGN_OR_RETURN(batch.backend, backend::BackendFor(bench_device));
  SLUICE_RETURN_IF_ERROR(model.To(bench_device));
  SLUICE_ASSIGN_OR_RETURN(batch.x, backend::CopyTo(x, bench_device));
  SLUICE_ASSIGN_OR_RETURN(batch.labels, backend::CopyTo(labels, bench_device));
  return batch;
}

template <typename Model, typename Opt>
void BM_TrainStep(benchmark::State& state, backend::Precision precision, Mode mode) {
  const bool compiled = mode != Mode::kEager;
  backend::cpu::SetCpuThreads(BenchThreads());
  Model model;
  Opt optimizer;
  absl::Status ready = backend::CheckPrecisionSupported(bench_device, precision);
  absl::StatusOr<DeviceBatch> batch = ready.ok() ? OnDevice(model) : ready;
  if (!batch.ok()) {
    state.SkipWithError(batch.status().ToString().c_str());
    return;
  }
  backend::Backend* const backend = batch->backend;
  // The whole step under the policy, as Trainer runs it (the backward closures capture it).
  backend::ScopedPrecision scope(precision);
  // One step, then the device's queue drained (a no-op on the CPU, which runs each kernel to its
  // end).
  // Compiled: the forward and backward passes and the optimizer's update traced on the first
  // step and replayed after it (train/function/), the optimizer's host half before each call,
  // as Fit's CompiledTrainStep does.
  function::Function traced(
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> grads, ForwardBackward(model, in[0], in[1]));
        SLUICE_RETURN_IF_ERROR(UpdateVariables(optimizer, grads, model.variables()));
        return std::vector<Tensor>{};
      },
      {.name = "train_step", .device_graphs = mode == Mode::kCompiled});
  auto step = [&]() -> absl::Status {
    if (compiled) {
      SLUICE_RETURN_IF_ERROR(optimizer.PrepareStep(model.variables()));
      SLUICE_RETURN_IF_ERROR(traced({batch->x, batch->labels}).status());
    } else {
      SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> grads,
                              ForwardBackward(model, batch->x, batch->labels));
      SLUICE_RETURN_IF_ERROR(Apply(optimizer, grads, model.variables()));
    }
    return backend->Synchronize();
  };
  // Warm up: the first step builds and caches the oneDNN primitives (cuDNN's plans on a GPU);
  // compiled, it traces, and the first replay faults in the fresh arena's pages (resnet-20: about
  // 100,000 page faults, 0.5 s or more on a VM), which a timed loop of a few dozen steps would
  // count as a third of each step.
  for (int warm = 0; warm < (compiled ? 2 : 1); ++warm) {
    if (absl::Status s = step(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  for (auto _ : state) {
    absl::Status s = step();
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.counters["images_per_second"] = benchmark::Counter(
      static_cast<double>(bench_batch), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = backend::cpu::CpuThreads();
  if (compiled) {
    state.counters["arena_mb"] = static_cast<double>(traced.arena_bytes()) / (1 << 20);
    state.counters["device_graphs"] = traced.device_graphs();
  }
  state.counters["batch"] = static_cast<double>(bench_batch);
  state.SetLabel(bench_device.DebugString());
}

// The optimizer's update alone (PrepareStep, then UpdateVariables, gradients fixed): in one
// backend pass over all the variables, as the optimizers run it, or in one call per variable,
// as they did before the multi-tensor updates (issue 44). --updates registers these.
template <typename Model, typename Opt>
void BM_Update(benchmark::State& state, bool one_pass) {
  backend::cpu::SetCpuThreads(BenchThreads());
  Model model;
  Opt optimizer;
  absl::StatusOr<DeviceBatch> batch = OnDevice(model);
  absl::StatusOr<std::vector<Tensor>> grads =
      batch.ok() ? ForwardBackward(model, batch->x, batch->labels) : batch.status();
  if (!grads.ok()) {
    state.SkipWithError(grads.status().ToString().c_str());
    return;
  }
  backend::Backend* const backend = batch->backend;
  const std::vector<autodiff::Variable*> vars = model.variables();
  const std::vector<std::optional<Tensor>> all = Gradients(*grads);
  auto update = [&]() -> absl::Status {
    SLUICE_RETURN_IF_ERROR(optimizer.PrepareStep(vars));
    if (one_pass) {
      SLUICE_RETURN_IF_ERROR(optimizer.UpdateVariables(all, vars));
    } else {
      for (size_t i = 0; i < vars.size(); ++i) {
        SLUICE_RETURN_IF_ERROR(optimizer.UpdateVariables({all[i]}, {vars[i]}));
      }
    }
    return backend->Synchronize();
  };
  if (absl::Status s = update(); !s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  for (auto _ : state) {
    if (absl::Status s = update(); !s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.counters["variables"] = static_cast<double>(vars.size());
  state.SetLabel(bench_device.DebugString());
}

std::vector<Mode> bench_modes = {Mode::kEager};
bool bench_updates = false;  // --updates

template <typename Model, typename Opt>
void Register(const std::string& name, backend::Precision precision) {
  // float32 and eager keep the names earlier figures were quoted under.
  std::string full = precision == backend::Precision::kFloat32
                         ? name
                         : absl::StrCat(name, "/", backend::PrecisionName(precision));
  for (Mode mode : bench_modes) {
    const std::string name = mode == Mode::kEager ? full : absl::StrCat(full, "/", NameOf(mode));
    benchmark::RegisterBenchmark(name.c_str(), BM_TrainStep<Model, Opt>, precision, mode)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  if (bench_updates && precision == backend::Precision::kFloat32) {
    for (const bool one_pass : {true, false}) {
      const std::string name =
          absl::StrCat(full, "/update/", one_pass ? "one_pass" : "per_variable");
      benchmark::RegisterBenchmark(name.c_str(), BM_Update<Model, Opt>, one_pass)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace sluice::train

// --precision=float32,mixed_bfloat16 (default float32): the policies to measure, side by side.
// --batch=N (default 64), --device=cpu|cuda|cuda:N (default cpu).
// --mode=eager,compiled,compiled_no_graphs (default eager): op by op, and/or traced once and
// replayed (on CUDA as CUDA graphs; compiled_no_graphs replays call by call there); a compiled
// benchmark's name ends in /compiled or /compiled_no_graphs. On the CPU the two compiled modes
// are the same program. --updates adds each model's optimizer update alone, in one pass over
// all the variables and in one call per variable (.../update/one_pass, .../update/per_variable).
int main(int argc, char** argv) {
  using sluice::train::backend::Precision;
  std::vector<Precision> precisions = {Precision::kFloat32};
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--batch=")) {
      if (!absl::SimpleAtoi(arg, &sluice::train::bench_batch) || sluice::train::bench_batch < 1) {
        std::fprintf(stderr, "train_step_bench: --batch takes a count >= 1\n");
        return 2;
      }
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--mode=")) {
      sluice::train::bench_modes.clear();
      for (absl::string_view mode : absl::StrSplit(arg, ',')) {
        const auto* named =
            std::find_if(std::begin(sluice::train::kModeNames), std::end(sluice::train::kModeNames),
                         [&](const auto& entry) { return entry.second == mode; });
        if (named == std::end(sluice::train::kModeNames)) {
          std::fprintf(stderr,
                       "train_step_bench: --mode takes eager, compiled and/or compiled_no_graphs, "
                       "comma-separated\n");
          return 2;
        }
        sluice::train::bench_modes.push_back(named->first);
      }
      continue;
    }
    if (arg == "--updates") {
      sluice::train::bench_updates = true;
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--onnx=")) {
      sluice::train::bench_onnx = std::string(arg);
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--size=")) {
      if (!absl::SimpleAtoi(arg, &sluice::train::bench_size) || sluice::train::bench_size < 1) {
        std::fprintf(stderr, "train_step_bench: --size takes a count >= 1\n");
        return 2;
      }
      continue;
    }
    if (absl::ConsumePrefix(&arg, "--device=")) {
      int index = 0;
      if (arg == "cpu") {
        sluice::train::bench_device = sluice::Device::Cpu();
      } else if (arg == "cuda" ||
                 (absl::ConsumePrefix(&arg, "cuda:") && absl::SimpleAtoi(arg, &index))) {
        sluice::train::bench_device = sluice::Device::Cuda(index);
      } else {
        std::fprintf(stderr, "train_step_bench: --device takes cpu, cuda or cuda:N\n");
        return 2;
      }
      continue;
    }
    if (!absl::ConsumePrefix(&arg, "--precision=")) {
      rest.push_back(argv[i]);
      continue;
    }
    precisions.clear();
    for (absl::string_view name : absl::StrSplit(arg, ',')) {
      absl::StatusOr<Precision> p = sluice::train::backend::ParsePrecision(name);
      if (!p.ok()) {
        std::fprintf(stderr, "train_step_bench: --%s\n", std::string(p.status().message()).c_str());
        return 2;
      }
      precisions.push_back(*p);
    }
  }
  namespace t = sluice::train;
  for (Precision p : precisions) {
    t::Register<t::Mlp, t::optimizers::Sgd>("train_step/mlp/sgd", p);
    t::Register<t::Mlp, t::optimizers::Adam>("train_step/mlp/adam", p);
    t::Register<t::Cnn, t::optimizers::Sgd>("train_step/cnn/sgd", p);
    t::Register<t::Cnn, t::optimizers::Adam>("train_step/cnn/adam", p);
    t::Register<t::ResNetSmall, t::optimizers::Sgd>("train_step/resnet-small/sgd", p);
    t::Register<t::ResNetSmall, t::optimizers::Adam>("train_step/resnet-small/adam", p);
    t::Register<t::ResNet20, t::optimizers::Sgd>("train_step/resnet-20/sgd", p);
    t::Register<t::ResNet20, t::optimizers::Adam>("train_step/resnet-20/adam", p);
    if (!t::bench_onnx.empty()) {
      t::Register<t::OnnxModel, t::optimizers::Sgd>("train_step/onnx/sgd", p);
      t::Register<t::OnnxModel, t::optimizers::Adam>("train_step/onnx/adam", p);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
