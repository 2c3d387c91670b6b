#include "python/device_binding.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "python/errors.h"
#include "python/gil.h"
#include "train/backend/backend.h"
#include "train/backend/plugin.h"

namespace sluice::python {

Device DeviceFromPython(const py::handle& name) {
  if (!py::isinstance<py::str>(name)) {
    throw py::type_error(absl::StrCat("a device is named by a str such as 'cuda:0', not ",
                                      std::string(py::str(name.get_type().attr("__name__")))));
  }
  absl::StatusOr<Device> device = ParseDevice(name.cast<std::string>());
  if (!device.ok())
    throw py::value_error(absl::StrCat("unknown device: ", device.status().message()));
  return *device;
}

void RegisterDevice(py::module_& m) {
  py::module_ cuda =
      m.def_submodule("cuda",
                      "CUDA devices, as torch.cuda names them. sluice's CUDA backend is a plugin "
                      "(libsluice_cuda.so), loaded the first time a CUDA device is asked for.");
  cuda.def(
      "is_built", [] { return train::backend::PluginBuilt(DeviceType::kCuda); },
      "Whether this build of sluice made its CUDA plugin (built where nvcc was).");
  cuda.def(
      "device_count",
      [] {
        absl::StatusOr<int> n;
        {
          ReleaseGil release;  // loading the plugin maps cuDNN and cuBLAS: seconds
          n = train::backend::DeviceCount(DeviceType::kCuda);
        }
        if (!n.ok()) ThrowStatus(n.status());
        return *n;
      },
      "The number of CUDA devices; raises RuntimeError saying why when there can be none (built "
      "without CUDA, the plugin or a library it needs did not load).");
  cuda.def(
      "is_available",
      [] {
        ReleaseGil release;
        absl::StatusOr<int> n = train::backend::DeviceCount(DeviceType::kCuda);
        return n.ok() && *n > 0;
      },
      "Whether a CUDA device can be used (torch.cuda.is_available); never raises.");
}

}  // namespace sluice::python
