#ifndef SLUICE_PYTHON_PY_FUNCTION_H_
#define SLUICE_PYTHON_PY_FUNCTION_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <string>

#include "dataset/dataset.h"

// Python callables inside the C++ pipeline: map, filter and interleave functions. They run on the
// pipeline's threads, each call under the GIL (the cost docs/python.md describes); everything else
// in the pipeline runs without it.
namespace sluice::python {

namespace py = pybind11;

// A Python object that C++ copies may outlive on any thread: the last reference, wherever it
// drops, takes the GIL to release the object (or leaks it once the interpreter is finalizing).
class PyFunction {
 public:
  explicit PyFunction(py::object fn) : fn_(std::move(fn)) {}
  ~PyFunction();
  PyFunction(const PyFunction&) = delete;
  PyFunction& operator=(const PyFunction&) = delete;
  const py::object& get() const { return fn_; }

 private:
  py::object fn_;
};

// fn(*components) -> a value or a tuple of values, as tf.data's map calls it. Components arrive
// as read-only NumPy arrays (bytes as bytes); results are copied into tensors, except a
// sluice.Tensor or an input returned as it is. A Python exception becomes the element's error and
// is raised again, itself, by next().
MapFn PythonMapFn(py::object fn);
// fn(*components) -> bool.
PredicateFn PythonPredicateFn(py::object fn);
// fn(*components) -> sluice.Dataset.
DatasetFn PythonDatasetFn(py::object fn, const std::string& what = "interleave function");
// scan's fn(state, element) -> (new_state, output_element), as tf.data's scan calls it: the state
// and the element each as one value, or a tuple when they have several components (converted as
// map's arguments and results).
ScanFn PythonScanFn(py::object fn);
// save's and snapshot's shard_func(*components) -> an int >= 0.
ShardFn PythonShardFn(py::object fn);
// load's and snapshot's reader_func(shards) -> sluice.Dataset, `shards` a list of sluice.Dataset,
// one per shard (tf.data gives a dataset of datasets: sluice's elements are tensors).
ReaderFn PythonReaderFn(py::object fn);
// from_generator's source: each iterator calls generator(*args) and yields what the Python
// iterator it returns yields, converted as a map function's results (to `signature`'s dtypes
// first, when it is known).
std::function<Generator()> PythonGeneratorSource(py::object generator, py::tuple args,
                                                 ElementSpec signature = {});

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_PY_FUNCTION_H_
