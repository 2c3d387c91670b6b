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

#endif  // SLUICE_PYTHON_DATASET_BINDING_H_
