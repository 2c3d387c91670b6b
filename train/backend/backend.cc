#include "train/backend/backend.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/backend/cpu/cpu_backend.h"
#include "train/backend/plugin.h"
#include "train/backend/require_float32.h"
#include "train/backend/trace_hooks.h"

namespace sluice::train::backend {
namespace {

// What the fused kernels of a backend without them answer (ops check FusesBatchNormRelu first).
absl::Status NoFusedBatchNormRelu(const Device& device) {
  return absl::FailedPreconditionError(
      absl::StrCat(device.DebugString(),
                   " has no fused batch norm + ReLU kernel (FusesBatchNormRelu is false)"));
}

struct Registry {
  Mutex mu;
  std::map<DeviceType, BackendFactory> factories ABSL_GUARDED_BY(mu);
  std::map<DeviceType, DeviceCounter> counters ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

// What `type` registered in `table` (factories or counters), loading its plugin first when it has
// none and a plugin serves it; an error saying why there is none.
template <typename Entry>
absl::StatusOr<Entry> Registered(std::map<DeviceType, Entry> Registry::*table, DeviceType type) {
  Registry& r = GetRegistry();
  for (bool loaded = false;; loaded = true) {
    {
      MutexLock lock(&r.mu);
      auto it = (r.*table).find(type);
      if (it != (r.*table).end()) return it->second;
    }
    if (type == DeviceType::kGuarded) {
      return absl::FailedPreconditionError(
          "that test device's backend is registered by tests only "
          "(tests/train/backend/guarded_backend.h)");
    }
    if (loaded) return absl::InternalError("its plugin did not register it");
    SLUICE_RETURN_IF_ERROR(LoadPlugin(type));
  }
}

// The event of work that is already done.
class DoneEvent final : public Event {
 public:
  absl::Status Synchronize() override { return absl::OkStatus(); }
};

}  // namespace

absl::StatusOr<Tensor> Backend::AllocateStaging(DType dtype, const Shape& shape) {
  return Tensor(dtype, shape);
}

absl::StatusOr<std::shared_ptr<Event>> Backend::CopyAsync(const Tensor& src, Tensor& dst) {
  SLUICE_RETURN_IF_ERROR(Copy(src, dst));
  return std::make_shared<DoneEvent>();
}

absl::Status Backend::WaitEvent(Event& event) { return event.Synchronize(); }

absl::StatusOr<std::shared_ptr<Event>> Backend::RecordEvent() {
  return std::make_shared<DoneEvent>();
}

absl::Status Backend::OrderQueueAfterThis(uintptr_t /*queue*/) { return absl::OkStatus(); }

absl::StatusOr<std::unique_ptr<DeviceGraph>> Backend::Capture(
    const std::function<absl::Status()>& /*work*/) {
  return absl::FailedPreconditionError(
      absl::StrCat(device().DebugString(),
                   "'s backend runs each kernel as it is called and records no device graphs "
                   "(CapturesGraphs() is false): replay the calls one by one"));
}

absl::Status Backend::OrderThisAfterQueue(uintptr_t /*queue*/) { return absl::OkStatus(); }

absl::StatusOr<Tensor> Backend::ComputeOperand(const Tensor& t) {
  if (t.dtype() != DType::kFloat32 || !ReadsBFloat16Operands()) return t;
  SLUICE_ASSIGN_OR_RETURN(Tensor copy, Allocate(DType::kBFloat16, t.shape()));
  SLUICE_RETURN_IF_ERROR(Cast(t, copy));
  return copy;
}

absl::Status Backend::MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                                 Tensor& out) {
  SLUICE_RETURN_IF_ERROR(MatMul(a, false, b, false, out));
  SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kAdd, out, bias, out));  // [n] broadcasts over [m, n]
  return relu ? Unary(UnaryOp::kRelu, out, out) : absl::OkStatus();
}

absl::Status Backend::Conv2DBiasForward(const ConvGeometry& geo, const Tensor& input,
                                        const Tensor& filter, const Tensor& bias, Tensor& output) {
  SLUICE_ASSIGN_OR_RETURN(Tensor conv, Allocate(DType::kFloat32, output.shape()));
  SLUICE_RETURN_IF_ERROR(Conv2DForward(geo, input, filter, conv));
  return Binary(BinaryOp::kAdd, conv, bias, output);  // [o] broadcasts over [n, oh, ow, o]
}

absl::Status Backend::Conv2DBiasReluForward(const ConvGeometry& geo, const Tensor& input,
                                            const Tensor& filter, const Tensor& bias,
                                            Tensor& output) {
  SLUICE_RETURN_IF_ERROR(Conv2DBiasForward(geo, input, filter, bias, output));
  return Unary(UnaryOp::kRelu, output, output);
}

absl::Status Backend::Conv2DBackwardFilterBias(const ConvGeometry& geo, const Tensor& input,
                                               const Tensor& grad_output, Tensor& grad_filter,
                                               Tensor& grad_bias) {
  SLUICE_RETURN_IF_ERROR(Conv2DBackwardFilter(geo, input, grad_output, grad_filter));
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, grad_bias.Reshape(Shape{1, 1, 1, geo.o}));
  return Reduce(ReduceOp::kSum, grad_output, {true, true, true, false}, 1.0f, sum);
}

int64_t Backend::BatchNormReluWorkspaceBytes(const Tensor& /*x*/) const { return 0; }

absl::Status Backend::BatchNormReluForwardTraining(const Tensor&, const Tensor&, const Tensor&,
                                                   float, Tensor&, Tensor&, Tensor&, Tensor&) {
  return NoFusedBatchNormRelu(device());
}

absl::Status Backend::BatchNormReluBackward(const Tensor&, const Tensor&, const Tensor&,
                                            const Tensor&, const Tensor&, const Tensor&, float,
                                            Tensor&, Tensor&, Tensor&) {
  return NoFusedBatchNormRelu(device());
}

absl::Status Backend::AddRelu(const Tensor& a, const Tensor& b, Tensor& out) {
  for (const Tensor* t : std::initializer_list<const Tensor*>{&a, &b, &out})
    SLUICE_RETURN_IF_ERROR(RequireFloat32(*t, "AddRelu", "x"));
  SLUICE_RETURN_IF_ERROR(Binary(BinaryOp::kAdd, a, b, out));
  return Unary(UnaryOp::kRelu, out, out);
}

absl::Status Backend::AddReluBackward(const Tensor& out, const Tensor& grad_out, Tensor& grad_a,
                                      Tensor& grad_b) {
  for (const Tensor* t : std::initializer_list<const Tensor*>{&out, &grad_out, &grad_a, &grad_b}) {
    SLUICE_RETURN_IF_ERROR(RequireFloat32(*t, "AddReluBackward", "x"));
  }
  SLUICE_RETURN_IF_ERROR(UnaryBackward(UnaryOp::kRelu, out, out, grad_out, grad_a));
  return Copy(grad_a, grad_b);
}

absl::Status CheckStepScalars(absl::string_view op, const Tensor& step, const Tensor& w) {
  if (step.dtype() != DType::kFloat32 || step.shape() != Shape({kStepScalars}) ||
      step.device() != w.device()) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": the step scalars must be float32[", kStepScalars, "] on ",
                     w.device().DebugString(), ", not ", DTypeName(step.dtype()),
                     step.shape().DebugString(), " on ", step.device().DebugString()));
  }
  return absl::OkStatus();
}

absl::Status Backend::SgdUpdate(Tensor& w, const Tensor& g, Tensor* velocity, const Tensor& step,
                                float momentum, bool nesterov) {
  const UpdateOperands var{.w = &w, .g = &g, .slots = {momentum != 0 ? velocity : nullptr}};
  return OptimizerUpdate({.kind = UpdateKind::kSgd, .momentum = momentum, .nesterov = nesterov},
                         {&var, 1}, step);
}

absl::Status Backend::AdamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v,
                                 const Tensor& step, float beta_1, float beta_2, float epsilon) {
  const UpdateOperands var{.w = &w, .g = &g, .slots = {&m, &v}};
  return OptimizerUpdate(
      {.kind = UpdateKind::kAdam, .beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon},
      {&var, 1}, step);
}

absl::Status Backend::RmspropUpdate(Tensor& w, const Tensor& g, Tensor& velocity,
                                    Tensor* average_gradient, Tensor* momentum_slot,
                                    const Tensor& step, float rho, float momentum, float epsilon) {
  const UpdateOperands var{
      .w = &w,
      .g = &g,
      .slots = {&velocity, average_gradient, momentum != 0 ? momentum_slot : nullptr}};
  return OptimizerUpdate({.kind = UpdateKind::kRmsprop,
                          .momentum = momentum,
                          .rho = rho,
                          .centered = average_gradient != nullptr,
                          .epsilon = epsilon},
                         {&var, 1}, step);
}

absl::Status Backend::AdagradUpdate(Tensor& w, const Tensor& g, Tensor& accumulator,
                                    const Tensor& step, float epsilon) {
  const UpdateOperands var{.w = &w, .g = &g, .slots = {&accumulator}};
  return OptimizerUpdate({.kind = UpdateKind::kAdagrad, .epsilon = epsilon}, {&var, 1}, step);
}

absl::Status Backend::AdadeltaUpdate(Tensor& w, const Tensor& g, Tensor& accumulated_grad,
                                     Tensor& accumulated_delta, const Tensor& step, float rho,
                                     float epsilon) {
  const UpdateOperands var{.w = &w, .g = &g, .slots = {&accumulated_grad, &accumulated_delta}};
  return OptimizerUpdate({.kind = UpdateKind::kAdadelta, .rho = rho, .epsilon = epsilon}, {&var, 1},
                         step);
}

absl::Status Backend::AdamaxUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& u,
                                   const Tensor& step, float beta_1, float beta_2, float epsilon) {
  const UpdateOperands var{.w = &w, .g = &g, .slots = {&m, &u}};
  return OptimizerUpdate(
      {.kind = UpdateKind::kAdamax, .beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon},
      {&var, 1}, step);
}

absl::Status Backend::NadamUpdate(Tensor& w, const Tensor& g, Tensor& m, Tensor& v,
                                  const Tensor& step, float beta_1, float beta_2, float epsilon) {
  const UpdateOperands var{.w = &w, .g = &g, .slots = {&m, &v}};
  return OptimizerUpdate(
      {.kind = UpdateKind::kNadam, .beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon},
      {&var, 1}, step);
}

void RegisterBackend(DeviceType type, BackendFactory factory) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  r.factories[type] = std::move(factory);
}

void RegisterDeviceCounter(DeviceType type, DeviceCounter counter) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  r.counters[type] = std::move(counter);
}

absl::StatusOr<Backend*> BackendFor(const Device& device) {
  if (Backend* tracing = internal::TracingBackend(); tracing && tracing->device() == device) {
    return tracing;  // a step being traced (train/function/): its kernels are recorded
  }
  if (device.is_cpu()) return &cpu::CpuBackend::Get();
  absl::StatusOr<BackendFactory> factory = Registered(&Registry::factories, device.type);
  if (!factory.ok()) {
    return WithContext(factory.status(),
                       absl::StrCat("a tensor is on ", device.DebugString(), " but "));
  }
  return (*factory)(device.index);
}

absl::StatusOr<int> DeviceCount(DeviceType type) {
  if (type == DeviceType::kCpu) return 1;
  SLUICE_ASSIGN_OR_RETURN(DeviceCounter counter, Registered(&Registry::counters, type));
  return counter();
}

absl::StatusOr<Backend*> BackendFor(absl::string_view op,
                                    std::initializer_list<const Tensor*> tensors) {
  Device device = Device::Cpu();
  bool first = true;
  for (const Tensor* t : tensors) {
    if (first) {
      device = t->device();
      first = false;
    } else if (!(t->device() == device)) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": inputs on different devices (",
                                                     device.DebugString(), " and ",
                                                     t->device().DebugString(), ")"));
    }
  }
  absl::StatusOr<Backend*> backend = BackendFor(device);
  if (!backend.ok()) {
    return WithContext(backend.status(), absl::StrCat(op, ": "));
  }
  return backend;
}

}  // namespace sluice::train::backend
