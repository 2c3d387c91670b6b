#ifndef SLUICE_PYTHON_DATASET_BINDING_H_
#define SLUICE_PYTHON_DATASET_BINDING_H_

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "dataset/dataset.h"
#include "io/compression.h"
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

// The datasets of files (python/file_dataset_binding.cc): text_line, csv, save, load, snapshot.
void RegisterFileDatasets(py::class_<PyDataset>& c);

// os.fspath's answer for a str, bytes or os.PathLike, as os.fsencode gives it (a name that is not
// UTF-8, surrogate-escaped by Python as os.listdir gives it, reaches the file system as it was);
// nullopt for anything else.
std::optional<std::string> PathOf(py::handle value);

// One file or directory name given in Python, as an argument type: a str, bytes or os.PathLike
// (pathlib.Path), as PathOf converts it; anything else is pybind11's TypeError for the call.
struct FilePath {
  std::string value;
};

// File names given in Python: one str, bytes or os.PathLike (pathlib.Path), or an iterable of
// them. Anything else is a TypeError naming `what` (the argument) and the type given.
std::vector<std::string> StringsOf(const py::object& value, const char* what = "filenames");
// tf.data's parallelism arguments: None is sequential (1), AUTOTUNE (-1) or a count >= 1; else
// ValueError naming `name`.
int ParallelismOf(const std::optional<int>& n, const char* name);
// compression_type: None (unset: guessed from each file's suffix), "", "GZIP" or "ZLIB" (any case).
// Raises ValueError for another name.
std::optional<Compression> CompressionOf(const std::optional<std::string>& type);

}  // namespace sluice::python

namespace pybind11::detail {

template <>
struct type_caster<sluice::python::FilePath> {
  PYBIND11_TYPE_CASTER(sluice::python::FilePath, const_name("str | bytes | os.PathLike"));
  bool load(handle src, bool /*convert*/) {
    std::optional<std::string> path = sluice::python::PathOf(src);
    if (!path) return false;
    value.value = *std::move(path);
    return true;
  }
  static handle cast(const sluice::python::FilePath& path, return_value_policy /*policy*/,
                     handle /*parent*/) {
    return bytes(path.value).release();
  }
};

}  // namespace pybind11::detail

#endif  // SLUICE_PYTHON_DATASET_BINDING_H_
