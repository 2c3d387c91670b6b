#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "dataset/dataset.h"
#include "python/dataset_binding.h"
#include "python/errors.h"
#include "python/gil.h"
#include "python/py_function.h"
#include "python/tensor_binding.h"

// sluice.Dataset's datasets of files: text_line and csv (tf.data.TextLineDataset and
// tf.data.experimental.CsvDataset), and save, load and snapshot, with tf.data's names, keyword
// arguments and defaults.
namespace sluice::python {

namespace py = pybind11;

namespace {

// A read buffer's size in bytes: None keeps the C++ default.
void SetBufferSize(std::optional<int64_t> buffer_size, size_t& out) {
  if (!buffer_size) return;
  if (*buffer_size < 1) {
    throw py::value_error(absl::StrCat("buffer_size must be >= 1, not ", *buffer_size));
  }
  out = static_cast<size_t>(*buffer_size);
}

// csv's exclude_cols as select_cols: the `count` columns left, in order, after leaving out the
// excluded ones (sorted, distinct, >= 0, as tf.data requires).
std::vector<int64_t> ComplementOf(const std::vector<int64_t>& excluded, size_t count) {
  for (size_t i = 0; i < excluded.size(); ++i) {
    if (excluded[i] < 0 || (i > 0 && excluded[i] <= excluded[i - 1])) {
      throw py::value_error("csv: exclude_cols must be sorted, distinct column indices >= 0");
    }
  }
  std::vector<int64_t> selected;
  size_t next = 0;
  for (int64_t column = 0; selected.size() < count; ++column) {
    if (next < excluded.size() && excluded[next] == column) {
      ++next;
    } else {
      selected.push_back(column);
    }
  }
  return selected;
}

// A record_defaults entry of csv, as CsvDataset takes them: a type (np.int32, np.float32,
// np.int64, np.bytes_; Python's int, float, str and bytes as sluice converts their values) makes
// the column required; a value is the column's default (one element: a scalar or a list of one,
// as tf.data accepts); an empty array makes it required too. A str is always a value.
Tensor RecordDefaultOf(py::handle item) {
  py::object numpy_dtype = py::module_::import("numpy").attr("dtype");
  if (PyType_Check(item.ptr()) || py::isinstance(item, numpy_dtype)) {
    DType dtype;
    if (item.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) {
      dtype = DType::kInt64;
    } else if (item.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) {
      dtype = DType::kFloat32;
    } else if (item.ptr() == reinterpret_cast<PyObject*>(&PyUnicode_Type) ||
               item.ptr() == reinterpret_cast<PyObject*>(&PyBytes_Type)) {
      dtype = DType::kBytes;
    } else {
      dtype = DTypeFromPython(item);
    }
    return Tensor(dtype, Shape{0});
  }
  Tensor value = TensorFromPython(item);
  if (value.rank() > 0 && value.num_elements() == 1) {
    absl::StatusOr<Tensor> scalar = value.Reshape(Shape{});
    if (!scalar.ok()) ThrowStatus(scalar.status());
    return *std::move(scalar);
  }
  return value;
}

// shard_func / reader_func: None, or a callable.
void CheckCallable(const py::object& fn, const char* what) {
  if (!fn.is_none() && !PyCallable_Check(fn.ptr())) {
    throw py::type_error(absl::StrCat(what, " must be a callable or None"));
  }
}

void RegisterTextFormats(py::class_<PyDataset>& c) {
  c.def_static(
       "text_line",
       [](const py::object& filenames, const std::optional<std::string>& compression_type,
          std::optional<int64_t> buffer_size, std::optional<int> num_parallel_reads) {
         TextLineOptions options;
         options.compression = CompressionOf(compression_type);
         SetBufferSize(buffer_size, options.buffer_size);
         options.num_parallel_reads = ParallelismOf(num_parallel_reads, "num_parallel_reads");
         return PyDataset{Dataset::TextLine(StringsOf(filenames), options)};
       },
       py::arg("filenames"), py::arg("compression_type") = py::none(),
       py::arg("buffer_size") = py::none(), py::arg("num_parallel_reads") = py::none(),
       "tf.data.TextLineDataset: each line of the files, in order, as a bytes scalar without its "
       "'\\n' or '\\r\\n'. compression_type '' (none), 'GZIP' or 'ZLIB'; None guesses it from "
       "each file's suffix (.gz, .zlib). num_parallel_reads None reads the files one after the "
       "other; N (or AUTOTUNE) reads N at once, a line from each in turn, as tf.data's.")
      .def_static(
          "csv",
          [](const py::object& filenames, const py::object& record_defaults,
             const std::optional<std::string>& compression_type, std::optional<int64_t> buffer_size,
             bool header, const std::string& field_delim, bool use_quote_delim,
             const std::string& na_value, const std::optional<std::vector<int64_t>>& select_cols,
             const std::optional<std::vector<int64_t>>& exclude_cols) {
            std::vector<Tensor> defaults;
            for (py::handle item : record_defaults) defaults.push_back(RecordDefaultOf(item));
            if (exclude_cols && select_cols) {
              throw py::value_error("csv: give select_cols or exclude_cols, not both");
            }
            if (field_delim.size() != 1) {
              throw py::value_error(
                  absl::StrCat("csv: field_delim must be one character, not '", field_delim, "'"));
            }
            CsvOptions options;
            options.compression = CompressionOf(compression_type);
            SetBufferSize(buffer_size, options.buffer_size);
            options.header = header;
            options.field_delim = field_delim[0];
            options.use_quote_delim = use_quote_delim;
            options.na_value = na_value;
            if (select_cols) options.select_cols = *select_cols;
            if (exclude_cols) options.select_cols = ComplementOf(*exclude_cols, defaults.size());
            return PyDataset{
                Dataset::Csv(StringsOf(filenames), std::move(defaults), std::move(options))};
          },
          py::arg("filenames"), py::arg("record_defaults"),
          py::arg("compression_type") = py::none(), py::arg("buffer_size") = py::none(),
          py::arg("header") = false, py::arg("field_delim") = ",",
          py::arg("use_quote_delim") = true, py::arg("na_value") = "",
          py::arg("select_cols") = py::none(), py::arg("exclude_cols") = py::none(),
          "tf.data.experimental.CsvDataset: each line a record, one scalar per column (per "
          "select_cols entry). record_defaults has one entry per column: a value (the default "
          "of an empty or na_value field; its type is the column's: int -> int64, float -> "
          "float32, str or bytes -> bytes, np.int32(0) -> int32), or a type (np.int32, "
          "np.float32, np.int64, int, float, str, bytes) or empty array for a required column. "
          "header skips each file's first line. A malformed record raises ValueError naming "
          "the file, line and column, in its place. exclude_cols, sorted column indices, parses "
          "the others (record_defaults then has one entry per column left; columns past them "
          "are not read).");
}

void RegisterSavedDatasets(py::class_<PyDataset>& c) {
  c.def(
       "save",
       [](const PyDataset& self, const FilePath& path,
          const std::optional<std::string>& compression, const py::object& shard_func) {
         CheckCallable(shard_func, "save: shard_func");
         SaveOptions options;
         options.compression = CompressionOf(compression).value_or(Compression::kNone);
         if (!shard_func.is_none()) options.shard_fn = PythonShardFn(shard_func);
         InterruptCheck interrupt;  // Ctrl-C, between elements
         options.check = interrupt.Check();
         absl::Status saved;
         {
           // The pipeline runs here, on this thread and its own, which take the GIL for
           // Python functions.
           ReleaseGil release;
           saved = self.dataset.Save(path.value, std::move(options));
         }
         interrupt.ThrowIfInterrupted();
         if (!saved.ok()) ThrowStatus(saved);
       },
       py::arg("path"), py::arg("compression") = py::none(), py::arg("shard_func") = py::none(),
       "tf.data.Dataset.save: runs the pipeline and writes every element to the directory "
       "path (shard files, then a manifest last: an error part-way leaves what was there). "
       "compression None (or ''), 'GZIP' or 'ZLIB'. shard_func(*components) returns an "
       "element's shard, an int >= 0 (None: round-robin over the machine's cores, and load "
       "gives the elements back in their order). Ctrl-C stops it with KeyboardInterrupt (no "
       "manifest is written). tf.data's checkpoint_args is not supported.")
      .def_static(
          "load",
          [](const FilePath& path, const py::object& reader_func) {
            CheckCallable(reader_func, "load: reader_func");
            LoadOptions options;
            if (!reader_func.is_none()) options.reader_fn = PythonReaderFn(reader_func);
            return PyDataset{Dataset::Load(path.value, std::move(options))};
          },
          py::arg("path"), py::kw_only(), py::arg("reader_func") = py::none(),
          "tf.data.Dataset.load: the elements save wrote to path (its compression and "
          "element_spec are read from there: tf.data's element_spec and compression arguments "
          "are not needed, and not accepted). "
          "reader_func(shards), shards a list of sluice.Dataset (one per shard file, where "
          "tf.data gives a dataset of datasets), returns the dataset to yield; None reads the "
          "shards round-robin.")
      .def(
          "snapshot",
          [](const PyDataset& self, const FilePath& path,
             const std::optional<std::string>& compression, const py::object& reader_func,
             const py::object& shard_func) {
            CheckCallable(reader_func, "snapshot: reader_func");
            CheckCallable(shard_func, "snapshot: shard_func");
            SnapshotOptions options;
            // AUTO: the runtime picks (tf.data: Snappy, which sluice lacks); sluice writes
            // uncompressed.
            if (compression && absl::AsciiStrToUpper(*compression) != "AUTO") {
              options.compression = *CompressionOf(compression);
            }
            if (!reader_func.is_none()) options.reader_fn = PythonReaderFn(reader_func);
            if (!shard_func.is_none()) options.shard_fn = PythonShardFn(shard_func);
            return PyDataset{self.dataset.Snapshot(path.value, std::move(options))};
          },
          py::arg("path"), py::arg("compression") = "AUTO", py::arg("reader_func") = py::none(),
          py::arg("shard_func") = py::none(),
          "tf.data.Dataset.snapshot: the first pass writes the elements to path as it yields "
          "them; later passes (this run or the next) read them back instead. A snapshot of "
          "another pipeline, or of changed input files, is rewritten; a change inside a Python "
          "function is not seen. compression 'AUTO' (none), None or '', 'GZIP' or 'ZLIB'; "
          "reader_func "
          "and shard_func as load's and save's.");
}

}  // namespace

void RegisterFileDatasets(py::class_<PyDataset>& c) {
  RegisterTextFormats(c);
  RegisterSavedDatasets(c);
}

}  // namespace sluice::python
