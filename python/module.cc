#include <pybind11/pybind11.h>

#include "autotune/controller.h"  // installs AUTOTUNE in every iterator (its inline registration)
#include "python/dataset_binding.h"
#include "python/device_binding.h"
#include "python/errors.h"
#include "python/iterator_binding.h"
#include "python/ops_binding.h"
#include "python/tensor_binding.h"

namespace sluice::python {

// Defined in their own files, one concept each.
void RegisterBench(pybind11::module_& m);
void RegisterImageDirectory(pybind11::module_& m);
void RegisterTesting(pybind11::module_& m);

}  // namespace sluice::python

// sluice/_sluice.so; sluice/__init__.py re-exports it as `sluice`.
PYBIND11_MODULE(_sluice, m) {
  namespace python = sluice::python;
  m.doc() = "sluice's C++ engine; import sluice, not this.";
  m.attr("__version__") = SLUICE_VERSION;
  python::RegisterErrors(m);
  python::RegisterTensor(m);
  python::RegisterOps(m);
  python::RegisterIterator(m);
  python::RegisterDevice(m);
  python::RegisterDataset(m);
  python::RegisterBench(m);
  python::RegisterImageDirectory(m);
  python::RegisterTesting(m);
}
