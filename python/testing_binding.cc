#include <pybind11/pybind11.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "python/errors.h"
#include "python/ops_binding.h"
#include "train/backend/plugin.h"

// sluice._testing: what tests/python needs to reach states a user's pipeline reaches only by
// chance: an op that blocks in C++ (without the GIL) and every status code as an exception.
namespace sluice::python {

namespace py = pybind11;

void RegisterTesting(py::module_& m) {
  py::module_ t = m.def_submodule("_testing", "Helpers for sluice's own tests.");
  t.def(
      "sleep",
      [](double seconds) {
        auto step = std::make_shared<OpStep>();
        step->description = "sleep()";
        step->fn = [seconds](Element e, const ElementContext&) -> absl::StatusOr<Element> {
          std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
          return e;
        };
        return PyOp{{step}};
      },
      py::arg("seconds"), "An op that blocks its thread in C++ for `seconds` per element.");
  t.def(
      "raise_status",
      [](int code, const std::string& message) {
        ThrowStatus(absl::Status(static_cast<absl::StatusCode>(code), message));
      },
      py::arg("code"), py::arg("message"), "Raises absl::Status(code, message) as Python sees it.");
  t.def(
      "load_plugin_file",
      [](const std::string& path) {
        absl::Status status = train::backend::LoadPluginFile(path);
        if (!status.ok()) ThrowStatus(status);
      },
      py::arg("path"),
      "Loads the device plugin at `path` into this process as the CUDA plugin is loaded "
      "(train/backend/plugin.h); raises the loader's error.");
}

}  // namespace sluice::python
