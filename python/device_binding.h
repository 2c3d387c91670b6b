#ifndef SLUICE_PYTHON_DEVICE_BINDING_H_
#define SLUICE_PYTHON_DEVICE_BINDING_H_

#include <pybind11/pybind11.h>

#include "core/device.h"

// Devices named from Python, and sluice.cuda (torch.cuda's is_available and device_count).
namespace sluice::python {

namespace py = pybind11;

// A device as PyTorch, JAX and TensorFlow users write it (sluice::ParseDevice: "cpu", "cuda",
// "cuda:1", "gpu:1", "/gpu:1", "/device:GPU:1"). Raises ValueError for another name.
Device DeviceFromPython(const py::handle& name);

// Registers sluice.cuda in `m`.
void RegisterDevice(py::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_DEVICE_BINDING_H_
