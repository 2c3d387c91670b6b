#include "train/backend/backend.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/mutex.h"
#include "core/status_macros.h"
#include "train/backend/cpu/cpu_backend.h"

namespace sluice::train::backend {
namespace {

struct Registry {
  Mutex mu;
  std::map<DeviceType, BackendFactory> factories ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
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

absl::StatusOr<Tensor> Backend::ComputeOperand(const Tensor& t) {
  if (t.dtype() != DType::kFloat32 || !ReadsBFloat16Operands()) return t;
  SLUICE_ASSIGN_OR_RETURN(Tensor copy, Allocate(DType::kBFloat16, t.shape()));
  SLUICE_RETURN_IF_ERROR(Cast(t, copy));
  return copy;
}

absl::Status Backend::Conv2DBiasForward(const ConvGeometry& geo, const Tensor& input,
                                        const Tensor& filter, const Tensor& bias, Tensor& output) {
  SLUICE_ASSIGN_OR_RETURN(Tensor conv, Allocate(DType::kFloat32, output.shape()));
  SLUICE_RETURN_IF_ERROR(Conv2DForward(geo, input, filter, conv));
  return Binary(BinaryOp::kAdd, conv, bias, output);  // [o] broadcasts over [n, oh, ow, o]
}

absl::Status Backend::Conv2DBackwardFilterBias(const ConvGeometry& geo, const Tensor& input,
                                               const Tensor& grad_output, Tensor& grad_filter,
                                               Tensor& grad_bias) {
  SLUICE_RETURN_IF_ERROR(Conv2DBackwardFilter(geo, input, grad_output, grad_filter));
  SLUICE_ASSIGN_OR_RETURN(Tensor sum, grad_bias.Reshape(Shape{1, 1, 1, geo.o}));
  return Reduce(ReduceOp::kSum, grad_output, {true, true, true, false}, 1.0f, sum);
}

void RegisterBackend(DeviceType type, BackendFactory factory) {
  Registry& r = GetRegistry();
  MutexLock lock(&r.mu);
  r.factories[type] = std::move(factory);
}

absl::StatusOr<Backend*> BackendFor(const Device& device) {
  if (device.is_cpu()) return &cpu::CpuBackend::Get();
  BackendFactory factory;
  {
    Registry& r = GetRegistry();
    MutexLock lock(&r.mu);
    auto it = r.factories.find(device.type);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    if (device.type == DeviceType::kGuarded) {
      return absl::FailedPreconditionError(
          absl::StrCat("a tensor is on ", device.DebugString(),
                       ", a test device whose backend only tests register "
                       "(tests/train/backend/guarded_backend.h)"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("a tensor is on ", device.DebugString(),
                     " but sluice was built without CUDA (configure with -DSLUICE_CUDA=ON on a "
                     "machine with nvcc)"));
  }
  return factory(device.index);
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
    return absl::Status(backend.status().code(),
                        absl::StrCat(op, ": ", backend.status().message()));
  }
  return backend;
}

}  // namespace sluice::train::backend
