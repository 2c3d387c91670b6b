#include "python/py_function.h"

#include <Python.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "python/dataset_binding.h"
#include "python/errors.h"
#include "python/tensor_binding.h"

namespace sluice::python {
namespace {

// A name for messages: the function's __qualname__, or its repr.
std::string NameOf(const py::object& fn) {
  if (py::hasattr(fn, "__qualname__")) return py::str(fn.attr("__qualname__"));
  return py::repr(fn);
}

py::tuple Arguments(const Element& element) {
  py::tuple args(element.size());
  for (size_t i = 0; i < element.size(); ++i) args[i] = ComponentToNumpy(element[i]);
  return args;
}

// Calls `body` under the GIL, turning a Python exception (or a pybind11 one, such as the
// TypeError of a result that is no tensor) into a Status naming `where`.
template <typename T, typename Body>
absl::StatusOr<T> CallPython(const std::string& where, Body body) {
  py::gil_scoped_acquire gil;
  try {
    return body();
  } catch (py::error_already_set& error) {
    return StatusFromPythonError(error, where);
  } catch (py::builtin_exception& e) {
    e.set_error();
    py::error_already_set error;
    return StatusFromPythonError(error, where);
  }
}

}  // namespace

PyFunction::~PyFunction() {
  if (!Py_IsInitialized() || _Py_IsFinalizing()) {
    fn_.release();  // nothing to return it to
    return;
  }
  py::gil_scoped_acquire gil;
  fn_ = py::object();
}

MapFn PythonMapFn(py::object fn) {
  auto f = std::make_shared<PyFunction>(std::move(fn));
  const std::string where = absl::StrCat("map function ", NameOf(f->get()));
  return [f, where](Element e, const ElementContext&) -> absl::StatusOr<Element> {
    return CallPython<Element>(where, [&]() -> Element {
      py::tuple args = Arguments(e);
      py::object result = f->get()(*args);
      // An input returned as it is keeps its tensor: no copy.
      auto convert = [&](py::handle value) -> Tensor {
        for (size_t i = 0; i < args.size(); ++i) {
          if (value.is(args[i])) return e[i];
        }
        return TensorFromPython(value);
      };
      Element out;
      if (py::isinstance<py::tuple>(result)) {
        for (py::handle item : result) out.push_back(convert(item));
      } else {
        out.push_back(convert(result));
      }
      return out;
    });
  };
}

PredicateFn PythonPredicateFn(py::object fn) {
  auto f = std::make_shared<PyFunction>(std::move(fn));
  const std::string where = absl::StrCat("filter predicate ", NameOf(f->get()));
  return [f, where](const Element& e) -> absl::StatusOr<bool> {
    return CallPython<bool>(where, [&] {
      py::tuple args = Arguments(e);
      return py::bool_(f->get()(*args)).cast<bool>();
    });
  };
}

DatasetFn PythonDatasetFn(py::object fn) {
  auto f = std::make_shared<PyFunction>(std::move(fn));
  const std::string where = absl::StrCat("interleave function ", NameOf(f->get()));
  return [f, where](Element e) -> absl::StatusOr<Dataset> {
    return CallPython<Dataset>(where, [&] {
      py::tuple args = Arguments(e);
      py::object result = f->get()(*args);
      if (!py::isinstance<PyDataset>(result)) {
        throw py::type_error(
            absl::StrCat(where, " must return a sluice.Dataset, not ",
                         std::string(py::str(result.get_type().attr("__name__")))));
      }
      return result.cast<const PyDataset&>().dataset;
    });
  };
}

}  // namespace sluice::python
