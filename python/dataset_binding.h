#ifndef SLUICE_PYTHON_DATASET_BINDING_H_
#define SLUICE_PYTHON_DATASET_BINDING_H_

#include <pybind11/pybind11.h>

#include "dataset/dataset.h"

// sluice.Dataset: tf.data.Dataset's Python names, keyword arguments and defaults over the C++
// Dataset, and sluice.Options.
namespace sluice::python {

namespace py = pybind11;

struct PyDataset {
  Dataset dataset;
};

void RegisterDataset(py::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_DATASET_BINDING_H_
