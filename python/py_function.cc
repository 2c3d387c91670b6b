#include "python/py_function.h"

#include <Python.h>

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "python/dataset_binding.h"
#include "python/errors.h"
#include "python/gil.h"
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

// Arguments a function was given, each viewing the tensor of `element` at its index.
struct Given {
  const py::tuple& args;
  const Element& element;
};

// A function's result (a value, or a tuple of values) as an element: NumPy arrays, numbers and
// bytes are copied into tensors; an argument returned as it is keeps its tensor, without a copy.
// `part` names which part of what `where` returned this is, when it is one of several.
Element ResultToElement(py::handle result, std::initializer_list<Given> given,
                        const std::string& where, const char* part = nullptr) {
  auto convert = [&](py::handle value) -> Tensor {
    for (const Given& g : given) {
      for (size_t i = 0; i < g.args.size(); ++i) {
        if (value.is(g.args[i])) return g.element[i];
      }
    }
    return TensorFromPython(value);
  };
  if (result.is_none()) {
    throw py::type_error(
        part == nullptr
            ? absl::StrCat(where,
                           " returned None, not a value or a tuple of values (does it end without "
                           "a return?)")
            : absl::StrCat(where, " returned None as its ", part,
                           ", not a value or a tuple of values"));
  }
  Element out;
  if (py::isinstance<py::tuple>(result)) {
    for (py::handle item : result) out.push_back(convert(item));
  } else {
    out.push_back(convert(result));
  }
  return out;
}

// Components as one argument: a single one as itself, several as a tuple (as tf.data's scan
// passes its state and element).
py::object AsOneArgument(const py::tuple& args) {
  if (args.size() == 1) return args[0];
  return args;
}

// Calls `body` under the GIL, turning a Python exception (or a pybind11 one, such as the
// TypeError of a result that is no tensor) into a Status naming `where`.
// Any other C++ exception (a std::bad_alloc making a tensor of the result) becomes a Status too:
// escaping, it would end the process from a pipeline thread.
template <typename T, typename Body>
absl::StatusOr<T> CallPython(const std::string& where, Body body) {
  if (!EnterPython()) return absl::CancelledError(where + ": the interpreter is exiting");
  absl::Cleanup leave = [] { LeavePython(); };
  absl::StatusOr<T> result;
  py::gil_scoped_acquire gil;
  PipelinePythonCall in_call;
  try {
    result = body();
  } catch (py::error_already_set& error) {
    result = StatusFromPythonError(error, where);
  } catch (py::builtin_exception& e) {
    e.set_error();
    py::error_already_set error;
    result = StatusFromPythonError(error, where);
  } catch (const std::bad_alloc&) {
    result = absl::ResourceExhaustedError(where + ": out of memory converting its result");
  } catch (const std::exception& e) {
    result = absl::InternalError(absl::StrCat(where, ": ", e.what()));
  }
  return result;
}

// `fn` as the function of `role`: what cannot be called is a TypeError where the dataset is
// made, not at the first next().
std::shared_ptr<PyFunction> CallableOf(py::object fn, absl::string_view role) {
  if (!PyCallable_Check(fn.ptr())) {
    throw py::type_error(absl::StrCat(role, " must be a callable, not ",
                                      std::string(py::str(fn.get_type().attr("__name__")))));
  }
  return std::make_shared<PyFunction>(std::move(fn));
}

}  // namespace

PyFunction::~PyFunction() {
  if (!EnterPython()) {
    fn_.release();  // the interpreter is exiting: nothing to return it to
    return;
  }
  if (Py_IsInitialized() && !IsFinalizing()) {
    py::gil_scoped_acquire gil;
    PipelinePythonCall in_call;  // the release may free anything, an iterator included
    fn_ = py::object();
  } else {
    fn_.release();
  }
  LeavePython();
}

MapFn PythonMapFn(py::object fn) {
  auto f = CallableOf(std::move(fn), "map function");
  const std::string where = absl::StrCat("map function ", NameOf(f->get()));
  return [f, where](Element e, const ElementContext&) -> absl::StatusOr<Element> {
    return CallPython<Element>(where, [&]() -> Element {
      py::tuple args = Arguments(e);
      py::object result = f->get()(*args);
      return ResultToElement(result, {{args, e}}, where);
    });
  };
}

PredicateFn PythonPredicateFn(py::object fn) {
  auto f = CallableOf(std::move(fn), "filter predicate");
  const std::string where = absl::StrCat("filter predicate ", NameOf(f->get()));
  return [f, where](const Element& e) -> absl::StatusOr<bool> {
    return CallPython<bool>(where, [&] {
      py::tuple args = Arguments(e);
      const py::object result = f->get()(*args);
      if (py::isinstance<py::bool_>(result)) return result.cast<bool>();
      // A NumPy bool scalar, a 0-d bool array, or a 0-d torch bool tensor.
      if (py::hasattr(result, "dtype") && py::hasattr(result, "ndim")) {
        const std::string dtype = py::str(result.attr("dtype"));
        const py::object ndim = result.attr("ndim");
        if ((dtype == "bool" || dtype == "torch.bool") && py::isinstance<py::int_>(ndim) &&
            ndim.cast<int64_t>() == 0) {
          return py::bool_(result).cast<bool>();
        }
      }
      // As tf.data: not a truth value of anything (a None from a missing return would drop
      // every element, a non-empty string keep them all).
      throw py::type_error(absl::StrCat(
          where, " must return a bool (or a NumPy bool scalar), not ",
          result.is_none() ? "None (does it end without a return?)"
                           : absl::StrCat(std::string(py::str(result.get_type().attr("__name__"))),
                                          " ", std::string(py::repr(result)))));
    });
  };
}

DatasetFn PythonDatasetFn(py::object fn, const std::string& what) {
  auto f = CallableOf(std::move(fn), what);
  const std::string where = absl::StrCat(what, " ", NameOf(f->get()));
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

ScanFn PythonScanFn(py::object fn) {
  auto f = CallableOf(std::move(fn), "scan function");
  const std::string where = absl::StrCat("scan function ", NameOf(f->get()));
  return [f, where](Element state, Element e) -> absl::StatusOr<std::pair<Element, Element>> {
    return CallPython<std::pair<Element, Element>>(where, [&] {
      py::tuple state_args = Arguments(state);
      py::tuple args = Arguments(e);
      py::object result = f->get()(AsOneArgument(state_args), AsOneArgument(args));
      if (!py::isinstance<py::tuple>(result) || py::len(result) != 2) {
        throw py::type_error(absl::StrCat(where,
                                          " must return a tuple (new_state, output_element), "
                                          "not ",
                                          std::string(py::repr(result))));
      }
      py::tuple pair = result.cast<py::tuple>();
      // In this order: the state's error first.
      Element new_state =
          ResultToElement(pair[0], {{state_args, state}, {args, e}}, where, "new state");
      Element output =
          ResultToElement(pair[1], {{state_args, state}, {args, e}}, where, "output element");
      return std::pair<Element, Element>(std::move(new_state), std::move(output));
    });
  };
}

ShardFn PythonShardFn(py::object fn) {
  auto f = CallableOf(std::move(fn), "shard function");
  const std::string where = absl::StrCat("shard function ", NameOf(f->get()));
  return [f, where](const Element& e) -> absl::StatusOr<int64_t> {
    return CallPython<int64_t>(where, [&] {
      py::tuple args = Arguments(e);
      py::object result = f->get()(*args);
      // An int, a NumPy integer or an integer array of one element (operator.index).
      PyObject* index = PyNumber_Index(result.ptr());
      if (index == nullptr) throw py::error_already_set();
      return py::reinterpret_steal<py::int_>(index).cast<int64_t>();
    });
  };
}

ReaderFn PythonReaderFn(py::object fn) {
  auto f = CallableOf(std::move(fn), "reader function");
  const std::string where = absl::StrCat("reader function ", NameOf(f->get()));
  return [f, where](std::vector<Dataset> shards) -> absl::StatusOr<Dataset> {
    return CallPython<Dataset>(where, [&] {
      py::list datasets;
      for (Dataset& shard : shards) datasets.append(py::cast(PyDataset{std::move(shard)}));
      py::object result = f->get()(datasets);
      if (!py::isinstance<PyDataset>(result)) {
        throw py::type_error(
            absl::StrCat(where, " must return a sluice.Dataset, not ",
                         std::string(py::str(result.get_type().attr("__name__")))));
      }
      return result.cast<const PyDataset&>().dataset;
    });
  };
}

namespace {

// A yielded value converted to the signature's dtypes as tf.data's from_generator does
// (numpy.asarray(value, dtype)), so a Python 1 fills a float32 component; bytes and bfloat16
// components, which NumPy has no dtype for, go as they are. Values of another count of components
// go as they are too: the declared signature's check then names the difference.
py::object ConvertedToSignature(py::object value, const ElementSpec& signature,
                                const std::string& where) {
  const std::vector<TensorSpec>& specs = signature.components();
  // One component: the whole value is it, a tuple included (tf.data makes (1, 2) a [2] tensor).
  const bool tuple = py::isinstance<py::tuple>(value) && specs.size() != 1;
  const size_t count = tuple ? py::len(value) : 1;
  if (specs.empty() || count != specs.size() || (specs.size() > 1 && !tuple)) return value;
  py::object asarray = py::module_::import("numpy").attr("asarray");
  py::list converted;
  for (size_t i = 0; i < count; ++i) {
    py::object item = tuple ? py::reinterpret_borrow<py::tuple>(value)[i] : value;
    const DType dtype = specs[i].dtype;
    if (dtype != DType::kBytes && dtype != DType::kBFloat16) {
      try {
        item = asarray(item, py::arg("dtype") = std::string(DTypeName(dtype)));
      } catch (py::error_already_set& e) {
        if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_TypeError) &&
            !e.matches(PyExc_OverflowError)) {
          throw;
        }
        throw py::type_error(absl::StrCat(where, " yielded an element whose component ", i, " (",
                                          std::string(py::repr(item)).substr(0, 80),
                                          ") could not be converted to ", DTypeName(dtype),
                                          ", the output_signature's: ", e.what()));
      }
    }
    // A one-component tuple left as it is (bytes) would be read as components.
    if (!tuple && py::isinstance<py::tuple>(item)) item = py::list(item);
    converted.append(item);
  }
  return tuple ? py::object(py::tuple(converted)) : py::object(converted[0]);
}

}  // namespace

std::function<Generator()> PythonGeneratorSource(py::object generator, py::tuple args,
                                                 ElementSpec signature) {
  auto f = std::make_shared<PyFunction>(std::move(generator));
  auto a = std::make_shared<PyFunction>(std::move(args));
  const std::string where = absl::StrCat("generator ", NameOf(f->get()));
  return [f, a, where, signature]() -> Generator {
    // The Python iterator, made by the first call (on the pipeline's thread, like the others):
    // its error then comes where the first element would.
    auto state = std::make_shared<std::shared_ptr<PyFunction>>();
    return [f, a, where, state, signature]() -> absl::StatusOr<std::optional<Element>> {
      return CallPython<std::optional<Element>>(where, [&]() -> std::optional<Element> {
        if (*state == nullptr) {
          *state = std::make_shared<PyFunction>(
              py::iter(f->get()(*py::reinterpret_borrow<py::tuple>(a->get()))));
        }
        PyObject* next = PyIter_Next((*state)->get().ptr());
        if (next == nullptr) {
          if (PyErr_Occurred()) throw py::error_already_set();
          return std::nullopt;
        }
        py::object value = py::reinterpret_steal<py::object>(next);
        if (signature.known()) value = ConvertedToSignature(std::move(value), signature, where);
        return ElementFromPython(value);
      });
    };
  };
}

}  // namespace sluice::python
