#ifndef SLUICE_PYTHON_ITERATOR_BINDING_H_
#define SLUICE_PYTHON_ITERATOR_BINDING_H_

#include <pybind11/pybind11.h>

#include "dataset/dataset.h"

// sluice.Iterator: iter(dataset). next() waits for C++ without the GIL and wakes for Ctrl-C;
// state_dict() / load_state_dict() follow PyTorch's StatefulDataLoader over the C++ iterator's
// checkpoint.
namespace sluice::python {

namespace py = pybind11;

py::object MakePyIterator(const Dataset& dataset);

void RegisterIterator(py::module_& m);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_ITERATOR_BINDING_H_
