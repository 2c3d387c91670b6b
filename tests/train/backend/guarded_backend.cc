#include "tests/train/backend/guarded_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/buffer.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/cpu/cpu_backend.h"

namespace sluice::train::testing {
namespace {

using backend::Backend;
using backend::BinaryOp;
using backend::ConvGeometry;
using backend::PoolGeometry;
using backend::ReduceOp;
using backend::UnaryOp;

std::atomic<int64_t> live_allocations{0};
std::atomic<int64_t> kernel_calls{0};
std::atomic<int64_t> async_copies{0};
std::atomic<int64_t> host_reads{0};
std::atomic<int64_t> recorded_events{0};
std::atomic<int64_t> event_waits{0};
std::atomic<int64_t> graphs_captured{0};
std::atomic<int64_t> graph_launches{0};
std::atomic<int> captures_to_fail{0};

// Set while this thread runs a GuardedGraph's launch.
thread_local bool in_graph = false;

// Host work that a real device graph could not hold (it would break the capture, or freeze a
// value that must change at every launch): an error when a graph's launch does it.
absl::Status RefuseInGraph(absl::string_view what) {
  if (!in_graph) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "GuardedBackend: ", what, " inside a device graph, which a CUDA graph cannot replay"));
}

// The test double of a CUDA graph: the capture keeps `work` without running it, and each launch
// runs it again, refusing the host work a real capture could not hold (RefuseInGraph). Unlike a
// real graph it re-reads host values at every launch, so it cannot catch a value frozen by
// capture; the Program keeps those out of graphs by their RecordedCall::host_work.
class GuardedGraph final : public backend::DeviceGraph {
 public:
  explicit GuardedGraph(std::function<absl::Status()> work) : work_(std::move(work)) {}
  absl::Status Launch() override {
    ++graph_launches;
    const int64_t before = kernel_calls.load();
    in_graph = true;
    absl::Status status = work_();
    in_graph = false;
    if (nodes_ == 0) nodes_ = static_cast<size_t>(kernel_calls.load() - before);
    return status;
  }
  size_t nodes() const override { return nodes_; }

 private:
  std::function<absl::Status()> work_;
  size_t nodes_ = 0;
};

// RecordEvent's: the guarded kernels run on the calling thread, so the work is done; a wait is
// counted.
class RecordedEvent final : public backend::Event {
 public:
  absl::Status Synchronize() override {
    ++event_waits;
    return absl::OkStatus();
  }
};

// The end of one CopyAsync, done on the backend's copy thread. `waited` says that the host has
// ordered itself after it (WaitEvent or Synchronize): only then may a kernel read the copy.
class GuardedEvent final : public backend::Event {
 public:
  absl::Status Synchronize() override {
    MutexLock l(&mu_);
    while (!done_) cv_.Wait(&mu_);
    waited_ = true;
    return status_;
  }
  void Finish(absl::Status status) {
    MutexLock l(&mu_);
    status_ = std::move(status);
    done_ = true;
    cv_.SignalAll();
  }
  bool waited() {
    MutexLock l(&mu_);
    return waited_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool waited_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// Copies in flight, by destination pages: a kernel that opens such pages before the copy's
// event was waited for reads memory a GPU might not have written yet, and dies here.
class IncomingCopies {
 public:
  void Add(void* base, std::shared_ptr<GuardedEvent> event) {
    MutexLock l(&mu_);
    by_base_[base] = std::move(event);
  }
  // Called when the pages are unmapped, so that a later mapping at the same address starts clean.
  void Forget(void* base) {
    MutexLock l(&mu_);
    by_base_.erase(base);
  }
  void CheckWaited(void* base) {
    std::shared_ptr<GuardedEvent> event;
    {
      MutexLock l(&mu_);
      auto it = by_base_.find(base);
      if (it == by_base_.end()) return;
      event = it->second;
    }
    if (event->waited()) {
      Forget(base);
      return;
    }
    std::fprintf(stderr,
                 "GuardedBackend: a kernel read a CopyAsync destination before waiting for its "
                 "event (Backend::WaitEvent): on a GPU it would read a copy still in flight\n");
    std::abort();
  }

 private:
  Mutex mu_;
  std::map<void*, std::shared_ptr<GuardedEvent>> by_base_ ABSL_GUARDED_BY(mu_);
};

IncomingCopies& Incoming() {
  static auto* incoming = new IncomingCopies;
  return *incoming;
}

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

class GuardedBackend;

// One kernel's access to device memory: holds the backend's lock (one kernel at a time, so no
// kernel closes pages another is using), opens the pages of each guarded operand and closes
// them again when it ends.
class Access {
 public:
  Access(Mutex& mu, Device device) : lock_(&mu), device_(device) { ++kernel_calls; }
  ~Access() {
    for (const auto& [base, size] : opened_) mprotect(base, size, PROT_NONE);
  }
  Access(const Access&) = delete;
  Access& operator=(const Access&) = delete;

  // Every tensor must be on this device (`op` names the kernel in the error).
  absl::Status Require(absl::string_view op, std::initializer_list<const Tensor*> tensors) const {
    for (const Tensor* t : tensors) {
      if (t != nullptr && !(t->device() == device_)) {
        return absl::InvalidArgumentError(absl::StrCat("GuardedBackend::", op, ": a tensor is on ",
                                                       t->device().DebugString(), ", not ",
                                                       device_.DebugString()));
      }
    }
    return absl::OkStatus();
  }

  // A host view of `t` (t itself when it is on the host), its pages open until this Access ends.
  Tensor View(const Tensor& t) {
    if (t.device().is_cpu() || t.buffer() == nullptr) return t;
    const std::shared_ptr<Buffer>& buffer = t.buffer();
    void* base = buffer->data();
    bool open = false;
    for (const auto& o : opened_) open = open || o.first == base;
    if (!open) {
      Incoming().CheckWaited(base);
      if (mprotect(base, buffer->size(), PROT_READ | PROT_WRITE) != 0) {
        std::fprintf(stderr, "GuardedBackend: mprotect: %s\n", std::strerror(errno));
        std::abort();
      }
      opened_.emplace_back(base, buffer->size());
    }
    // The view keeps the guarded buffer (and so the mapping) alive.
    auto host = Buffer::Wrap(base, buffer->size(), Device::Cpu(), [keep = buffer](void*) {});
    return *Tensor::FromBuffer(t.dtype(), t.shape(), std::move(host), t.byte_offset());
  }
  // For outputs passed by pointer: a view with a stable address, or null.
  Tensor* ViewPtr(const Tensor* t) {
    if (t == nullptr) return nullptr;
    return &views_.emplace_back(View(*t));
  }

 private:
  MutexLock lock_;
  Device device_;
  std::vector<std::pair<void*, size_t>> opened_;
  std::deque<Tensor> views_;
};

class GuardedBackend final : public Backend {
 public:
  explicit GuardedBackend(int index) : device_(Device::Guarded(index)) {}
  ~GuardedBackend() override {
    {
      MutexLock l(&copy_mu_);
      stopping_ = true;
      copy_cv_.SignalAll();
    }
    if (copy_thread_.joinable()) copy_thread_.join();
  }

  Device device() const override { return device_; }

  absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) override {
    if (dtype == DType::kBytes) {
      return absl::InvalidArgumentError("GuardedBackend: bytes tensors stay on the host");
    }
    const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
    const size_t page = PageSize();
    const size_t mapped = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
    void* p = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return absl::ResourceExhaustedError(
          absl::StrCat("GuardedBackend: mmap of ", mapped, " bytes: ", std::strerror(errno)));
    }
    ++live_allocations;
    auto buffer = Buffer::Wrap(p, mapped, device_, [mapped](void* q) {
      Incoming().Forget(q);
      munmap(q, mapped);
      --live_allocations;
    });
    return Tensor::FromBuffer(dtype, shape, std::move(buffer));
  }

  absl::Status Copy(const Tensor& src, Tensor& dst) override {
    Access a(mu_, device_);
    for (const Tensor* t : std::initializer_list<const Tensor*>{&src, &dst}) {
      if (!t->device().is_cpu() && !(t->device() == device_)) {
        return absl::InvalidArgumentError(
            absl::StrCat("GuardedBackend::Copy: a tensor is on ", t->device().DebugString()));
      }
    }
    if (src.device().is_cpu() || dst.device().is_cpu()) {
      SLUICE_RETURN_IF_ERROR(RefuseInGraph("a copy to or from the host"));
    }
    // On a GPU, a copy to the host waits for every queued kernel.
    if (dst.device().is_cpu() && !src.device().is_cpu()) ++host_reads;
    Tensor s = a.View(src), d = a.View(dst);
    return cpu().Copy(s, d);
  }

  absl::Status Fill(Tensor& t, float value) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Fill", {&t}));
    Tensor v = a.View(t);
    return cpu().Fill(v, value);
  }

  absl::Status Axpby(float alpha, const Tensor& x, float beta, Tensor& y) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Axpby", {&x, &y}));
    Tensor vy = a.View(y);
    return cpu().Axpby(alpha, a.View(x), beta, vy);
  }

  absl::Status Synchronize() override { return RefuseInGraph("Synchronize"); }

  bool CapturesGraphs() const override { return true; }
  absl::StatusOr<std::unique_ptr<backend::DeviceGraph>> Capture(
      const std::function<absl::Status()>& work) override {
    if (in_graph) return absl::FailedPreconditionError("GuardedBackend: Capture inside a graph");
    if (captures_to_fail.load() > 0) {
      --captures_to_fail;
      return absl::InternalError("GuardedBackend: this capture fails (FailGuardedCaptures)");
    }
    ++graphs_captured;
    return std::unique_ptr<backend::DeviceGraph>(std::make_unique<GuardedGraph>(work));
  }

  // As a GPU's copy engine: the copy runs on a thread of its own, after a delay, so that the
  // compute overlaps it and a consumer that forgets WaitEvent dies (IncomingCopies).
  absl::StatusOr<std::shared_ptr<backend::Event>> CopyAsync(const Tensor& src,
                                                            Tensor& dst) override {
    if (!src.device().is_cpu() || !(dst.device() == device_) || src.dtype() != dst.dtype() ||
        src.num_elements() != dst.num_elements() || dst.buffer() == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GuardedBackend::CopyAsync: want a host tensor and one on ", device_.DebugString(),
          " of one dtype and size, got ", src.device().DebugString(), " ", DTypeName(src.dtype()),
          src.shape().DebugString(), " and ", dst.device().DebugString(), " ",
          DTypeName(dst.dtype()), dst.shape().DebugString()));
    }
    auto event = std::make_shared<GuardedEvent>();
    Incoming().Add(dst.buffer()->data(), event);
    MutexLock l(&copy_mu_);
    if (!copy_thread_.joinable()) copy_thread_ = std::thread([this] { CopyLoop(); });
    copies_.push_back({src, dst, event});
    copy_cv_.Signal();
    return std::shared_ptr<backend::Event>(std::move(event));
  }

  absl::Status WaitEvent(backend::Event& event) override {
    if (dynamic_cast<GuardedEvent*>(&event) == nullptr) {
      return absl::InvalidArgumentError("GuardedBackend::WaitEvent: not an event of this backend");
    }
    // This device's "stream" is the calling thread: ordering after the copy is waiting for it.
    return event.Synchronize();
  }

  absl::StatusOr<std::shared_ptr<backend::Event>> RecordEvent() override {
    SLUICE_RETURN_IF_ERROR(RefuseInGraph("RecordEvent"));
    ++recorded_events;
    return std::shared_ptr<backend::Event>(std::make_shared<RecordedEvent>());
  }

  // The CPU's kernels run here, so their operands take the CPU's form (made by this backend's
  // Allocate and Cast, so they stay guarded).
  bool ReadsBFloat16Operands() const override { return cpu().ReadsBFloat16Operands(); }
  absl::Status MatMul(const Tensor& x, bool tx, const Tensor& y, bool ty, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("MatMul", {&x, &y, &out}));
    Tensor o = a.View(out);
    return cpu().MatMul(a.View(x), tx, a.View(y), ty, o);
  }
  absl::Status Conv2DForward(const ConvGeometry& geo, const Tensor& input, const Tensor& filter,
                             Tensor& output) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Conv2DForward", {&input, &filter, &output}));
    Tensor o = a.View(output);
    return cpu().Conv2DForward(geo, a.View(input), a.View(filter), o);
  }
  absl::Status Conv2DBackwardData(const ConvGeometry& geo, const Tensor& grad_output,
                                  const Tensor& filter, Tensor& grad_input) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Conv2DBackwardData", {&grad_output, &filter, &grad_input}));
    Tensor gi = a.View(grad_input);
    return cpu().Conv2DBackwardData(geo, a.View(grad_output), a.View(filter), gi);
  }
  absl::Status Conv2DBackwardFilter(const ConvGeometry& geo, const Tensor& input,
                                    const Tensor& grad_output, Tensor& grad_filter) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Conv2DBackwardFilter", {&input, &grad_output, &grad_filter}));
    Tensor gf = a.View(grad_filter);
    return cpu().Conv2DBackwardFilter(geo, a.View(input), a.View(grad_output), gf);
  }
  absl::Status Conv2DBiasForward(const ConvGeometry& geo, const Tensor& input, const Tensor& filter,
                                 const Tensor& bias, Tensor& output) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Conv2DBiasForward", {&input, &filter, &bias, &output}));
    Tensor o = a.View(output);
    return cpu().Conv2DBiasForward(geo, a.View(input), a.View(filter), a.View(bias), o);
  }
  absl::Status Conv2DBackwardFilterBias(const ConvGeometry& geo, const Tensor& input,
                                        const Tensor& grad_output, Tensor& grad_filter,
                                        Tensor& grad_bias) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(
        a.Require("Conv2DBackwardFilterBias", {&input, &grad_output, &grad_filter, &grad_bias}));
    Tensor gf = a.View(grad_filter), gb = a.View(grad_bias);
    return cpu().Conv2DBackwardFilterBias(geo, a.View(input), a.View(grad_output), gf, gb);
  }

  absl::StatusOr<Tensor> Pool2DForward(const PoolGeometry& geo, const Tensor& input,
                                       Tensor& output) override {
    Tensor host_workspace;
    {
      Access a(mu_, device_);
      SLUICE_RETURN_IF_ERROR(a.Require("Pool2DForward", {&input, &output}));
      Tensor o = a.View(output);
      SLUICE_ASSIGN_OR_RETURN(host_workspace, cpu().Pool2DForward(geo, a.View(input), o));
    }
    // The CPU kernel's workspace is host memory: it moves to the device like any result. That
    // copy is this double's, not host work of the caller (CUDA's kernel writes it on the device),
    // so a graph may hold it.
    SLUICE_ASSIGN_OR_RETURN(Tensor workspace,
                            Allocate(host_workspace.dtype(), host_workspace.shape()));
    const bool launching = std::exchange(in_graph, false);
    absl::Status copied = Copy(host_workspace, workspace);
    in_graph = launching;
    SLUICE_RETURN_IF_ERROR(copied);
    return workspace;
  }
  absl::Status Pool2DBackward(const PoolGeometry& geo, const Tensor& input, const Tensor& output,
                              const Tensor& workspace, const Tensor& grad_output,
                              Tensor& grad_input) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(
        a.Require("Pool2DBackward", {&input, &output, &workspace, &grad_output, &grad_input}));
    Tensor gi = a.View(grad_input);
    return cpu().Pool2DBackward(geo, a.View(input), a.View(output), a.View(workspace),
                                a.View(grad_output), gi);
  }

  absl::Status BatchNormForwardTraining(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        float epsilon, Tensor& y, Tensor& mean,
                                        Tensor& variance) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(
        a.Require("BatchNormForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance}));
    Tensor vy = a.View(y), vm = a.View(mean), vv = a.View(variance);
    return cpu().BatchNormForwardTraining(a.View(x), a.View(gamma), a.View(beta), epsilon, vy, vm,
                                          vv);
  }
  absl::Status BatchNormForwardInference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& mean, const Tensor& variance, float epsilon,
                                         Tensor& y) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(
        a.Require("BatchNormForwardInference", {&x, &gamma, &beta, &mean, &variance, &y}));
    Tensor vy = a.View(y);
    return cpu().BatchNormForwardInference(a.View(x), a.View(gamma), a.View(beta), a.View(mean),
                                           a.View(variance), epsilon, vy);
  }
  absl::Status BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                 const Tensor& variance, const Tensor& grad_y, float epsilon,
                                 bool statistics_are_constant, Tensor& grad_x, Tensor& grad_gamma,
                                 Tensor& grad_beta) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("BatchNormBackward", {&x, &gamma, &mean, &variance, &grad_y,
                                                           &grad_x, &grad_gamma, &grad_beta}));
    Tensor gx = a.View(grad_x), gg = a.View(grad_gamma), gb = a.View(grad_beta);
    return cpu().BatchNormBackward(a.View(x), a.View(gamma), a.View(mean), a.View(variance),
                                   a.View(grad_y), epsilon, statistics_are_constant, gx, gg, gb);
  }
  bool FusesBatchNormRelu() const override { return cpu().FusesBatchNormRelu(); }
  int64_t BatchNormReluWorkspaceBytes(const Tensor& x) const override {
    return cpu().BatchNormReluWorkspaceBytes(x);  // reads x's shape and dtype only
  }
  absl::Status BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float epsilon, Tensor& y,
                                            Tensor& mean, Tensor& variance,
                                            Tensor& workspace) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("BatchNormReluForwardTraining",
                                     {&x, &gamma, &beta, &y, &mean, &variance, &workspace}));
    Tensor vy = a.View(y), vm = a.View(mean), vv = a.View(variance), vw = a.View(workspace);
    return cpu().BatchNormReluForwardTraining(a.View(x), a.View(gamma), a.View(beta), epsilon, vy,
                                              vm, vv, vw);
  }
  absl::Status BatchNormReluBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& variance, const Tensor& workspace,
                                     const Tensor& grad_y, float epsilon, Tensor& grad_x,
                                     Tensor& grad_gamma, Tensor& grad_beta) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require(
        "BatchNormReluBackward",
        {&x, &gamma, &mean, &variance, &workspace, &grad_y, &grad_x, &grad_gamma, &grad_beta}));
    Tensor gx = a.View(grad_x), gg = a.View(grad_gamma), gb = a.View(grad_beta);
    return cpu().BatchNormReluBackward(a.View(x), a.View(gamma), a.View(mean), a.View(variance),
                                       a.View(workspace), a.View(grad_y), epsilon, gx, gg, gb);
  }

  absl::Status AddRelu(const Tensor& x, const Tensor& y, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("AddRelu", {&x, &y, &out}));
    Tensor vo = a.View(out);
    return cpu().AddRelu(a.View(x), a.View(y), vo);
  }
  absl::Status AddReluBackward(const Tensor& out, const Tensor& grad_out, Tensor& grad_a,
                               Tensor& grad_b) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("AddReluBackward", {&out, &grad_out, &grad_a, &grad_b}));
    Tensor ga = a.View(grad_a), gb = a.View(grad_b);
    return cpu().AddReluBackward(a.View(out), a.View(grad_out), ga, gb);
  }

  absl::Status Binary(BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Binary", {&x, &y, &out}));
    Tensor o = a.View(out);
    return cpu().Binary(op, a.View(x), a.View(y), o);
  }
  absl::Status BinaryBackward(BinaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_out,
                              Tensor* grad_x, Tensor* grad_y) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("BinaryBackward", {&x, &y, &grad_out, grad_x, grad_y}));
    return cpu().BinaryBackward(op, a.View(x), a.View(y), a.View(grad_out), a.ViewPtr(grad_x),
                                a.ViewPtr(grad_y));
  }
  absl::Status Unary(UnaryOp op, const Tensor& x, Tensor& y) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Unary", {&x, &y}));
    Tensor vy = a.View(y);
    return cpu().Unary(op, a.View(x), vy);
  }
  absl::Status UnaryBackward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                             Tensor& grad_x) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("UnaryBackward", {&x, &y, &grad_y, &grad_x}));
    Tensor gx = a.View(grad_x);
    return cpu().UnaryBackward(op, a.View(x), a.View(y), a.View(grad_y), gx);
  }
  absl::Status Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                       Tensor& out) override {
    SLUICE_RETURN_IF_ERROR(RefuseInGraph("a Dropout (its seed would be frozen)"));
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Dropout", {&x, &mask, &out}));
    Tensor m = a.View(mask), o = a.View(out);
    return cpu().Dropout(a.View(x), rate, seed, m, o);
  }

  absl::Status Reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, float scale,
                      Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Reduce", {&x, &out}));
    Tensor o = a.View(out);
    return cpu().Reduce(op, a.View(x), reduced, scale, o);
  }
  absl::Status AccumulateSum(const Tensor& x, float scale, Tensor& total) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("AccumulateSum", {&x, &total}));
    Tensor t = a.View(total);
    return cpu().AccumulateSum(a.View(x), scale, t);
  }
  absl::Status BroadcastTo(const Tensor& in, float scale, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("BroadcastTo", {&in, &out}));
    Tensor o = a.View(out);
    return cpu().BroadcastTo(a.View(in), scale, o);
  }
  absl::Status ReduceMaxBackward(const Tensor& x, const Tensor& max, const Tensor& grad_max,
                                 Tensor& grad_x) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("ReduceMaxBackward", {&x, &max, &grad_max, &grad_x}));
    Tensor gx = a.View(grad_x);
    return cpu().ReduceMaxBackward(a.View(x), a.View(max), a.View(grad_max), gx);
  }
  absl::Status Transpose(const Tensor& x, const std::vector<int>& perm, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Transpose", {&x, &out}));
    Tensor o = a.View(out);
    return cpu().Transpose(a.View(x), perm, o);
  }
  absl::Status Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Concat", {&out}));
    std::vector<Tensor> views;
    for (const Tensor& t : inputs) {
      SLUICE_RETURN_IF_ERROR(a.Require("Concat", {&t}));
      views.push_back(a.View(t));
    }
    Tensor o = a.View(out);
    return cpu().Concat(views, axis, o);
  }
  absl::Status Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Split", {&x}));
    std::vector<Tensor> views;
    for (const Tensor& t : outputs) {
      SLUICE_RETURN_IF_ERROR(a.Require("Split", {&t}));
      views.push_back(a.View(t));
    }
    return cpu().Split(a.View(x), axis, views);
  }

  absl::Status Softmax(const Tensor& logits, Tensor& y) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Softmax", {&logits, &y}));
    Tensor vy = a.View(y);
    return cpu().Softmax(a.View(logits), vy);
  }
  absl::Status SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("SoftmaxBackward", {&y, &grad_y, &grad_x}));
    Tensor gx = a.View(grad_x);
    return cpu().SoftmaxBackward(a.View(y), a.View(grad_y), gx);
  }
  absl::Status SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor& loss,
                                         Tensor& probs, float scale, Tensor* reduced) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(
        a.Require("SparseSoftmaxCrossEntropy", {&logits, &labels, &loss, &probs, reduced}));
    Tensor l = a.View(loss), p = a.View(probs);
    if (reduced == nullptr) {
      return cpu().SparseSoftmaxCrossEntropy(a.View(logits), a.View(labels), l, p, scale, nullptr);
    }
    Tensor r = a.View(*reduced);
    return cpu().SparseSoftmaxCrossEntropy(a.View(logits), a.View(labels), l, p, scale, &r);
  }
  absl::Status SparseSoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels,
                                                 const Tensor& grad_loss, float scale,
                                                 Tensor& grad_logits) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("SparseSoftmaxCrossEntropyBackward",
                                     {&probs, &labels, &grad_loss, &grad_logits}));
    Tensor g = a.View(grad_logits);
    return cpu().SparseSoftmaxCrossEntropyBackward(a.View(probs), a.View(labels), a.View(grad_loss),
                                                   scale, g);
  }

  absl::Status Cast(const Tensor& x, Tensor& y) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("Cast", {&x, &y}));
    Tensor vy = a.View(y);
    return cpu().Cast(a.View(x), vy);
  }
  absl::Status ArgMax(const Tensor& x, Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("ArgMax", {&x, &out}));
    Tensor o = a.View(out);
    return cpu().ArgMax(a.View(x), o);
  }
  absl::Status CastLabels(const Tensor& labels, int64_t num_classes, Tensor& labels64,
                          Tensor& invalid) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("CastLabels", {&labels, &labels64, &invalid}));
    Tensor l = a.View(labels64), i = a.View(invalid);
    return cpu().CastLabels(a.View(labels), num_classes, l, i);
  }
  absl::Status InTopK(const Tensor& predictions, const Tensor& labels, int k, bool first_max_only,
                      Tensor& out) override {
    Access a(mu_, device_);
    SLUICE_RETURN_IF_ERROR(a.Require("InTopK", {&predictions, &labels, &out}));
    Tensor o = a.View(out);
    return cpu().InTopK(a.View(predictions), a.View(labels), k, first_max_only, o);
  }

  absl::Status OptimizerUpdate(const backend::UpdateRule& rule,
                               absl::Span<const backend::UpdateOperands> vars,
                               const Tensor& step) override {
    Access a(mu_, device_);
    std::vector<backend::UpdateOperands> views(vars.begin(), vars.end());
    for (backend::UpdateOperands& var : views) {
      SLUICE_RETURN_IF_ERROR(a.Require(backend::UpdateName(rule.kind),
                                       {var.w, var.g, var.slots[0], var.slots[1], var.slots[2]}));
      var.w = a.ViewPtr(var.w);
      var.g = a.ViewPtr(var.g);
      for (Tensor*& slot : var.slots) slot = a.ViewPtr(slot);
    }
    SLUICE_RETURN_IF_ERROR(a.Require(backend::UpdateName(rule.kind), {&step}));
    return cpu().OptimizerUpdate(rule, views, a.View(step));
  }

 private:
  static Backend& cpu() { return backend::cpu::CpuBackend::Get(); }

  struct PendingCopy {
    Tensor src, dst;
    std::shared_ptr<GuardedEvent> event;
  };

  void CopyLoop() {
    MutexLock l(&copy_mu_);
    while (true) {
      while (!stopping_ && copies_.empty()) copy_cv_.Wait(&copy_mu_);
      if (copies_.empty()) return;
      PendingCopy c = std::move(copies_.front());
      copies_.pop_front();
      copy_mu_.Unlock();
      // Long enough that a kernel queued right after CopyAsync would overtake the copy.
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      absl::Status status;
      {
        // Opens the destination's pages as a kernel does, without IncomingCopies' check: this
        // is the copy that check waits for.
        MutexLock kernel_lock(&mu_);
        void* base = c.dst.buffer()->data();
        const size_t size = c.dst.buffer()->size();
        mprotect(base, size, PROT_READ | PROT_WRITE);
        std::memcpy(static_cast<char*>(base) + c.dst.byte_offset(), c.src.raw_data(),
                    c.src.byte_size());
        mprotect(base, size, PROT_NONE);
      }
      ++async_copies;
      // The tensors go before the event is done: once it is, this thread holds nothing.
      std::shared_ptr<GuardedEvent> event = std::move(c.event);
      c = PendingCopy();
      event->Finish(status);
      copy_mu_.Lock();
    }
  }

  const Device device_;
  Mutex mu_;

  Mutex copy_mu_;
  CondVar copy_cv_;
  std::deque<PendingCopy> copies_ ABSL_GUARDED_BY(copy_mu_);
  bool stopping_ ABSL_GUARDED_BY(copy_mu_) = false;
  std::thread copy_thread_;  // started by the first CopyAsync, under copy_mu_
};

}  // namespace

void RegisterGuardedBackend() {
  static std::once_flag once;
  std::call_once(once, [] {
    backend::RegisterBackend(DeviceType::kGuarded, [](int index) -> absl::StatusOr<Backend*> {
      static Mutex mu;
      static auto* backends = new std::map<int, std::unique_ptr<GuardedBackend>>;
      MutexLock lock(&mu);
      std::unique_ptr<GuardedBackend>& b = (*backends)[index];
      if (b == nullptr) b = std::make_unique<GuardedBackend>(index);
      return b.get();
    });
  });
}

int64_t GuardedLiveAllocations() { return live_allocations.load(); }
int64_t GuardedKernelCalls() { return kernel_calls.load(); }
int64_t GuardedAsyncCopies() { return async_copies.load(); }
int64_t GuardedHostReads() { return host_reads.load(); }
int64_t GuardedRecordedEvents() { return recorded_events.load(); }
int64_t GuardedEventWaits() { return event_waits.load(); }
int64_t GuardedGraphsCaptured() { return graphs_captured.load(); }
int64_t GuardedGraphLaunches() { return graph_launches.load(); }
void FailGuardedCaptures(int n) { captures_to_fail = n; }

}  // namespace sluice::train::testing
