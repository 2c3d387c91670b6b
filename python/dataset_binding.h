#ifndef SLUICE_PYTHON_DATASET_BINDING_H_
#define SLUICE_PYTHON_DATASET_BINDING_H_

#include <pybind11/pybind11.h>

#include <optional>

#include "dataset/dataset.h"
#include "python/ops_binding.h"

// sluice.Dataset: tf.data.Dataset's Python names, keyword arguments and defaults over the C++
// Dataset, and sluice.Options.
namespace sluice::python {

namespace py = pybind11;

struct PyDataset {
  Dataset dataset;
  // Set when `dataset` is input.Map(op) of sluice.ops functions: batch() makes that Map again,
  // writing into the batch's rows (CompileOp's batch_size), so that Batch copies nothing.
  struct BuiltinMap {
    Dataset input;
    PyOp op;
    MapOptions options;
  };
  std::optional<BuiltinMap> last_map;
};

void RegisterDataset(py::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_DATASET_BINDING_H_
