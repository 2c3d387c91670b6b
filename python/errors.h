#ifndef SLUICE_PYTHON_ERRORS_H_
#define SLUICE_PYTHON_ERRORS_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

// absl::Status <-> Python exceptions, both ways: a C++ error becomes the Python exception a Python
// user expects (NotFound -> FileNotFoundError, ...) with the C++ message, and an exception raised
// by a Python function inside the pipeline (a map function) travels through the C++ iterator as a
// Status and comes out of next() as the very exception object, traceback and all.
namespace sluice::python {

namespace py = pybind11;

// Registers sluice.DataLossError (a subclass of IOError) in `m`.
void RegisterErrors(py::module_& m);

// The Python exception class a status code maps to.
py::handle ExceptionTypeFor(absl::StatusCode code);

// Raises `status` (not OK) as a Python exception: the original exception when it came from
// Python (see StatusFromPythonError), else ExceptionTypeFor(code) with the status's message.
// Needs the GIL.
[[noreturn]] void ThrowStatus(const absl::Status& status);

// The Python exception being handled as a Status, to return from a C++ callback: its code from
// the exception's class (ValueError -> InvalidArgument, ...), its message "`where`: Class:
// message", and a payload by which ThrowStatus finds the exception object again. Needs the GIL.
absl::Status StatusFromPythonError(py::error_already_set& error, absl::string_view where);

// Ctrl-C for C++ work that runs without the GIL, and so never runs Python's signal handlers:
// Check() is a C++ `check` callback (BenchmarkOptions, SaveOptions) that takes the GIL and runs
// them, returning Cancelled once one raised; ThrowIfInterrupted(), with the GIL again, raises
// that KeyboardInterrupt as it was raised.
class InterruptCheck {
 public:
  std::function<absl::Status()> Check();
  void ThrowIfInterrupted();

 private:
  std::optional<py::error_already_set> interrupted_;
};

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_ERRORS_H_
