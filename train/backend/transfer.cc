#include "train/backend/transfer.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/backend.h"
#include "train/backend/trace_hooks.h"

namespace sluice::train::backend {

absl::StatusOr<Tensor> CopyTo(const Tensor& t, const Device& device) {
  if (t.dtype() == DType::kBytes) {
    return absl::InvalidArgumentError("CopyTo: bytes tensors stay on the host");
  }
  if (!t.device().is_cpu() && !device.is_cpu() && !(t.device() == device)) {
    // Between two devices: staged through the host (no backend copies peer to peer).
    SLUICE_ASSIGN_OR_RETURN(Tensor host, CopyTo(t, Device::Cpu()));
    return CopyTo(host, device);
  }
  // The backend of the side that is not the host does the copy.
  const Device& copier = device.is_cpu() ? t.device() : device;
  SLUICE_ASSIGN_OR_RETURN(Backend * backend, BackendFor(copier));
  // Host copies come from the CPU backend's allocator too: the tape clones gradients and a
  // recomputed block its incoming gradient on every step, and plain heap blocks of megabytes
  // freed each step leave glibc's heap fragmented (measured: tens of MB of resident memory).
  SLUICE_ASSIGN_OR_RETURN(Backend * target, BackendFor(device.is_cpu() ? Device::Cpu() : device));
  SLUICE_ASSIGN_OR_RETURN(Tensor out, target->Allocate(t.dtype(), t.shape()));
  SLUICE_RETURN_IF_ERROR(backend->Copy(t, out));
  return out;
}

absl::Status CopyInto(const Tensor& src, Tensor& dst) {
  if (!src.device().is_cpu() && !dst.device().is_cpu() && !(src.device() == dst.device())) {
    SLUICE_ASSIGN_OR_RETURN(Tensor host, CopyTo(src, Device::Cpu()));
    return CopyInto(host, dst);
  }
  SLUICE_ASSIGN_OR_RETURN(Backend * backend,
                          BackendFor(dst.device().is_cpu() ? src.device() : dst.device()));
  return backend->Copy(src, dst);
}

absl::StatusOr<Tensor> Clone(const Tensor& t) { return CopyTo(t, t.device()); }

absl::StatusOr<Tensor> ToHost(const Tensor& t) {
  // While tracing, a value the trace computes read on the host is its trace-time value forever:
  // the tracing backend refuses it. On the CPU no copy would reach it to refuse.
  if (Tracing()) SLUICE_RETURN_IF_ERROR(internal::TracingBackend()->CheckHostRead(t));
  if (t.device().is_cpu()) return t;
  return CopyTo(t, Device::Cpu());
}

absl::StatusOr<float> ReadScalar(const Tensor& t) {
  if (t.dtype() != DType::kFloat32 || t.num_elements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReadScalar: want float32 with one element, got ", DTypeName(t.dtype()),
                     t.shape().DebugString()));
  }
  SLUICE_ASSIGN_OR_RETURN(Tensor host, ToHost(t));
  return host.data<float>()[0];
}

absl::StatusOr<Element> ElementToHost(Element element) {
  for (Tensor& t : element) {
    SLUICE_ASSIGN_OR_RETURN(t, ToHost(t));
  }
  return element;
}

bool MovesToDevice(const Tensor& t) { return t.device().is_cpu() && t.dtype() != DType::kBytes; }

absl::StatusOr<Element> ElementToDevice(Element element, const Device& device, size_t first) {
  for (size_t i = first; i < element.size(); ++i) {
    Tensor& t = element[i];
    if (!MovesToDevice(t)) continue;
    SLUICE_ASSIGN_OR_RETURN(t, CopyTo(t, device));
  }
  return element;
}

}  // namespace sluice::train::backend
