#include "python/dataset_binding.h"

#include <pybind11/stl.h>

#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dataset/dataset_base.h"
#include "dataset/element_spec.h"
#include "dataset/options.h"
#include "io/compression.h"
#include "python/device_binding.h"
#include "python/errors.h"
#include "python/gil.h"
#include "python/iterator_binding.h"
#include "python/ops_binding.h"
#include "python/py_function.h"
#include "python/tensor_binding.h"
#include "train/backend/backend.h"
#include "train/data/prefetch_to_device.h"

namespace sluice::python {
namespace {

std::string DTypesOf(const ElementSpec& spec) {
  std::string out = "(";
  for (size_t i = 0; i < spec.components().size(); ++i) {
    absl::StrAppend(&out, i > 0 ? ", " : "", DTypeName(spec.components()[i].dtype));
  }
  return out + ")";
}

// The first two of `specs` whose dtypes are both known and differ, by index; nullopt when none
// do. tf.data refuses such inputs when it builds the dataset; the C++ pipeline checks each
// element (one that fails can be dropped), so Python checks what the specs know up front.
std::optional<std::pair<size_t, size_t>> FirstDTypeMismatch(const std::vector<ElementSpec>& specs) {
  std::optional<size_t> first;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].known()) continue;
    if (!first) {
      first = i;
    } else if (DTypesOf(specs[i]) != DTypesOf(specs[*first])) {
      return std::make_pair(*first, i);
    }
  }
  return std::nullopt;
}

void CheckSameDTypes(const ElementSpec& a, const ElementSpec& b) {
  if (!FirstDTypeMismatch({a, b})) return;
  throw py::type_error(absl::StrCat("concatenate: the datasets' elements differ: ", DTypesOf(a),
                                    " and ", DTypesOf(b), " (dtypes of the components)"));
}

// The same for the inputs of sample_from_datasets and choose_from_datasets.
void CheckSameDTypes(const std::vector<Dataset>& inputs, const char* what) {
  std::vector<ElementSpec> specs;
  for (const Dataset& input : inputs) specs.push_back(input.element_spec());
  const auto mismatch = FirstDTypeMismatch(specs);
  if (!mismatch) return;
  const auto [i, j] = *mismatch;
  throw py::type_error(absl::StrCat(what, ": the datasets' elements differ: datasets[", i, "] has ",
                                    DTypesOf(specs[i]), ", datasets[", j, "] ", DTypesOf(specs[j]),
                                    " (dtypes of the components)"));
}

// from_generator's output_signature: a (dtype, shape) pair for one component, or a tuple of them,
// as element_spec gives; a shape is a tuple of ints and None (an unknown dimension), or None (an
// unknown rank).
ElementSpec SignatureFromPython(const py::object& signature) {
  auto bad = [&] {
    return py::type_error(absl::StrCat(
        "output_signature must be a (dtype, shape) pair, or a tuple of them (one per component) "
        "as element_spec gives, e.g. ((\"float32\", (None, 3)), (\"int64\", ())); got ",
        std::string(py::repr(signature))));
  };
  auto component = [&](py::handle pair) -> TensorSpec {
    if (!py::isinstance<py::tuple>(pair) && !py::isinstance<py::list>(pair)) throw bad();
    py::sequence items = py::reinterpret_borrow<py::sequence>(pair);
    if (items.size() != 2) throw bad();
    TensorSpec spec;
    spec.dtype = DTypeFromPython(items[0]);
    py::object shape = items[1];
    if (shape.is_none()) {
      spec.shape = PartialShape::UnknownRank();
    } else {
      if (!py::isinstance<py::tuple>(shape) && !py::isinstance<py::list>(shape)) throw bad();
      std::vector<int64_t> dims;
      for (py::handle d : shape) {
        if (d.is_none()) {
          dims.push_back(PartialShape::kUnknownDim);
        } else if (!py::isinstance<py::bool_>(d) && PyIndex_Check(d.ptr())) {
          // A Python or NumPy integer.
          auto index = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
          if (!index) throw py::error_already_set();
          int overflow = 0;
          const long long size = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
          if (overflow != 0 || size < 0) throw bad();
          dims.push_back(size);
        } else {
          throw bad();
        }
      }
      spec.shape = PartialShape(absl::Span<const int64_t>(dims));
    }
    return spec;
  };
  if (!py::isinstance<py::tuple>(signature) && !py::isinstance<py::list>(signature)) throw bad();
  py::sequence items = signature;
  if (items.size() == 0) throw bad();
  const bool one = !py::isinstance<py::tuple>(items[0]) && !py::isinstance<py::list>(items[0]);
  std::vector<TensorSpec> components;
  if (one) {
    components.push_back(component(signature));
  } else {
    for (py::handle pair : items) components.push_back(component(pair));
  }
  return ElementSpec(std::move(components));
}

// The built-in functions a map_func names: a sluice.ops.Op, or a list of them (composed);
// nullopt for anything else.
std::optional<PyOp> BuiltinOf(const py::object& fn) {
  if (py::isinstance<PyOp>(fn)) return fn.cast<PyOp>();
  if (!py::isinstance<py::list>(fn) && !py::isinstance<py::tuple>(fn)) return std::nullopt;
  PyOp composed;
  for (py::handle op : fn) {
    if (!py::isinstance<PyOp>(op)) {
      throw py::type_error("a list given to map must hold sluice.ops functions only");
    }
    const PyOp& p = op.cast<const PyOp&>();
    composed.steps.insert(composed.steps.end(), p.steps.begin(), p.steps.end());
  }
  if (composed.steps.empty()) throw py::value_error("map([]): no function");
  return composed;
}

PyDataset Wrap(Dataset d) { return PyDataset{std::move(d)}; }

// A list (any iterable) of sluice.Dataset; `what` names the argument in the TypeError.
std::vector<Dataset> DatasetsOf(const py::object& datasets, const char* what) {
  std::vector<Dataset> out;
  for (py::handle d : datasets) {
    if (!py::isinstance<PyDataset>(d)) {
      throw py::type_error(absl::StrCat(what, " must hold sluice.Dataset objects, not ",
                                        std::string(py::str(d.get_type().attr("__name__")))));
    }
    out.push_back(d.cast<const PyDataset&>().dataset);
  }
  return out;
}

void RegisterOptions(py::module_& m) {
  py::class_<Options>(m, "Options", R"doc(
tf.data.Options: pipeline-wide settings, applied with Dataset.with_options. Unset (None)
fields keep the value of an inner with_options, or the default.

seed: the seed of every random op without its own (None: a fresh one per iterator).
deterministic: the order is fixed whatever the parallelism (default True).
threads: worker threads of the pipeline (0 = all cores); cpu_budget, ram_budget: AUTOTUNE's.
autotune: run AUTOTUNE on AUTOTUNE knobs (default True).
checkpoint_sources: checkpoints save buffered elements as their positions (default True).
)doc")
      .def(py::init([](std::optional<uint64_t> seed, std::optional<bool> deterministic,
                       std::optional<int> threads, std::optional<int> cpu_budget,
                       std::optional<int64_t> ram_budget, std::optional<bool> autotune,
                       std::optional<bool> checkpoint_sources) {
             Options o;
             o.seed = seed;
             o.deterministic = deterministic;
             o.threads = threads;
             o.cpu_budget = cpu_budget;
             o.ram_budget = ram_budget;
             o.autotune = autotune;
             o.checkpoint_sources = checkpoint_sources;
             return o;
           }),
           py::kw_only(), py::arg("seed") = py::none(), py::arg("deterministic") = py::none(),
           py::arg("threads") = py::none(), py::arg("cpu_budget") = py::none(),
           py::arg("ram_budget") = py::none(), py::arg("autotune") = py::none(),
           py::arg("checkpoint_sources") = py::none())
      .def_readwrite("seed", &Options::seed,
                     "Seed of every random op without its own; None: a fresh one per iterator.")
      .def_readwrite("deterministic", &Options::deterministic,
                     "With seeds set, the same elements in the same order whatever the "
                     "parallelism (None: True); False lets parallel ops emit what is ready first.")
      .def_readwrite("threads", &Options::threads,
                     "Worker threads of the pipeline's oneTBB arena; 0 or None: all cores.")
      .def_readwrite("cpu_budget", &Options::cpu_budget,
                     "AUTOTUNE's busy workers at most, which also caps the arena's threads "
                     "(0 or None: the arena's threads).")
      .def_readwrite("ram_budget", &Options::ram_budget,
                     "AUTOTUNE's buffered bytes at most (0 or None: half the available memory).")
      .def_readwrite("autotune", &Options::autotune,
                     "Whether AUTOTUNE tunes the pipeline's knobs (None: True).")
      .def_readwrite("checkpoint_sources", &Options::checkpoint_sources,
                     "Whether state_dict() saves buffered elements as the positions that "
                     "recompute them (None: True) or as the elements (for map functions that are "
                     "not functions of their input and seed).")
      .def("__repr__", [](const Options& o) {
        std::vector<std::string> set;  // the fields set, as Python keyword arguments
        auto add = [&](const char* name, const auto& v) {
          if (!v) return;
          if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, bool>) {
            set.push_back(absl::StrCat(name, "=", *v ? "True" : "False"));
          } else {
            set.push_back(absl::StrCat(name, "=", *v));
          }
        };
        add("seed", o.seed);
        add("threads", o.threads);
        add("cpu_budget", o.cpu_budget);
        add("ram_budget", o.ram_budget);
        add("deterministic", o.deterministic);
        add("autotune", o.autotune);
        add("checkpoint_sources", o.checkpoint_sources);
        return absl::StrCat("sluice.Options(", absl::StrJoin(set, ", "), ")");
      });
}

void RegisterSources(py::class_<PyDataset>& c) {
  c.def_static(
       "list_files",
       [](const py::object& file_pattern, std::optional<bool> shuffle,
          std::optional<uint64_t> seed) {
         return Wrap(Dataset::ListFiles(StringsOf(file_pattern, "file_pattern"),
                                        {.shuffle = shuffle.value_or(true), .seed = seed}));
       },
       py::arg("file_pattern"), py::arg("shuffle") = py::none(), py::arg("seed") = py::none(),
       "tf.data.Dataset.list_files: the files matching the glob(s), shuffled by default.")
      .def_static(
          "tfrecord",
          [](const py::object& filenames, const std::optional<std::string>& compression_type,
             std::optional<int64_t> buffer_size, std::optional<int> num_parallel_reads,
             bool skip_corrupt, int64_t max_record_bytes) {
            TFRecordOptions options;
            options.skip_corrupt = skip_corrupt;
            if (max_record_bytes < 1) {
              throw py::value_error(absl::StrCat(
                  "tfrecord: max_record_bytes must be >= 1 (bytes), not ", max_record_bytes));
            }
            options.max_record_bytes = static_cast<uint64_t>(max_record_bytes);
            if (skip_corrupt) {
              // From a reader thread, without the GIL: a line on stderr, as tf.data's
              // ignore_errors(log_warning=True).
              options.on_skipped = [](const absl::Status& why) {
                std::fprintf(stderr, "sluice: skipped %s\n", std::string(why.message()).c_str());
              };
            }
            options.compression = CompressionOf(compression_type);
            if (buffer_size) {
              if (*buffer_size < 1) {
                throw py::value_error(
                    absl::StrCat("tfrecord: buffer_size must be >= 1 (bytes), not ", *buffer_size));
              }
              options.buffer_size = static_cast<size_t>(*buffer_size);
            }
            options.num_parallel_reads = ParallelismOf(num_parallel_reads, "num_parallel_reads");
            return Wrap(Dataset::TFRecord(StringsOf(filenames), options));
          },
          py::arg("filenames"), py::arg("compression_type") = py::none(),
          py::arg("buffer_size") = py::none(), py::arg("num_parallel_reads") = py::none(),
          py::kw_only(), py::arg("skip_corrupt") = false,
          py::arg("max_record_bytes") = static_cast<int64_t>(kDefaultMaxRecordBytes),
          "tf.data.TFRecordDataset: each record a bytes scalar. compression_type '' (none), "
          "'GZIP' or 'ZLIB'; None guesses it from each file's suffix (.gz, .zlib). "
          "skip_corrupt=True skips a record whose CRC fails (or a truncated last one) and reads "
          "on, naming it on stderr; without it the error ends the file, so ignore_errors() "
          "loses the rest of that file. A record longer than max_record_bytes (1 GiB) is an "
          "error before anything is allocated for it: a corrupt length cannot exhaust memory.")
      .def_static(
          "from_tensor_slices",
          [](const py::object& tensors) {
            return Wrap(Dataset::FromTensorSlices(ElementFromPython(tensors)));
          },
          py::arg("tensors"),
          "tf.data.Dataset.from_tensor_slices: rows of an array, or of a tuple of arrays (the "
          "arrays are copied once, here).")
      .def_static(
          "from_tensors",
          [](const py::object& tensors) {
            return Wrap(Dataset::FromTensors(ElementFromPython(tensors)));
          },
          py::arg("tensors"), "tf.data.Dataset.from_tensors: one element.")
      .def_static(
          "from_generator",
          [](const py::object& generator, const std::optional<py::tuple>& args,
             const py::object& output_signature) {
            if (!PyCallable_Check(generator.ptr())) {
              throw py::type_error("from_generator: generator must be a callable");
            }
            ElementSpec signature;
            if (!output_signature.is_none()) signature = SignatureFromPython(output_signature);
            return Wrap(Dataset::FromGenerator(
                PythonGeneratorSource(generator, args.value_or(py::tuple()), signature),
                signature));
          },
          py::arg("generator"), py::arg("args") = py::none(),
          py::arg("output_signature") = py::none(),
          "tf.data.Dataset.from_generator: the elements generator(*args) yields (a value or a "
          "tuple of values each), taken under the GIL. output_signature, a (dtype, shape) pair "
          "or a tuple of them as element_spec gives, converts each yielded value to its dtype "
          "(as numpy.asarray) and makes an element of another shape or count of components an "
          "error naming it; without one, element_spec is None and nothing is checked. A restore "
          "calls the generator again and skips to the saved position.")
      .def_static(
          "range",
          [](int64_t a, std::optional<int64_t> b, int64_t step) {
            if (step == 0) throw py::value_error("range() step must not be zero");
            return b ? Wrap(Dataset::Range(a, *b, step)) : Wrap(Dataset::Range(0, a, step));
          },
          py::arg("start"), py::arg("stop") = py::none(), py::arg("step") = 1,
          "tf.data.Dataset.range: int64 scalars.")
      .def_static(
          "zip",
          [](const py::args& args) {
            // zip(a, b) or tf.data's zip((a, b)).
            py::sequence datasets = args;
            if (args.size() == 1 &&
                (py::isinstance<py::tuple>(args[0]) || py::isinstance<py::list>(args[0]))) {
              datasets = args[0];
            }
            std::vector<Dataset> inputs;
            for (py::handle d : datasets) {
              if (!py::isinstance<PyDataset>(d)) {
                throw py::type_error(
                    absl::StrCat("zip takes sluice.Datasets (zip(a, b) or zip((a, b))), not ",
                                 std::string(py::str(d.get_type().attr("__name__")))));
              }
              inputs.push_back(d.cast<const PyDataset&>().dataset);
            }
            return Wrap(Dataset::Zip(std::move(inputs)));
          },
          "tf.data.Dataset.zip(a, b, ...) or zip((a, b, ...)): the components of each side by "
          "side.")
      .def_static(
          "sample_from_datasets",
          [](const py::object& datasets, const py::object& weights, std::optional<uint64_t> seed,
             bool stop_on_empty_dataset) {
            std::vector<Dataset> inputs = DatasetsOf(datasets, "sample_from_datasets: datasets");
            if (inputs.empty()) throw py::value_error("sample_from_datasets: no datasets");
            CheckSameDTypes(inputs, "sample_from_datasets");
            std::vector<double> w(inputs.size(), 1.0);  // None: uniform
            if (py::isinstance<PyDataset>(weights)) {
              throw py::type_error(
                  "sample_from_datasets: weights must be a list of numbers; a dataset of weights "
                  "(tf.data's time-varying weights) is not supported");
            }
            if (!weights.is_none()) w = weights.cast<std::vector<double>>();
            if (w.size() != inputs.size()) {
              throw py::value_error(absl::StrCat("sample_from_datasets: ", w.size(),
                                                 " weights for ", inputs.size(), " datasets"));
            }
            return Wrap(Dataset::SampleFromDatasets(
                std::move(inputs), std::move(w),
                {.seed = seed, .stop_on_empty_dataset = stop_on_empty_dataset}));
          },
          py::arg("datasets"), py::arg("weights") = py::none(), py::arg("seed") = py::none(),
          py::arg("stop_on_empty_dataset") = false,
          "tf.data.Dataset.sample_from_datasets: each element from datasets[i] with probability "
          "weights[i] / sum(weights) (None: uniform), drawn from the seed (None: the pipeline's) "
          "and the element's index, so a seeded pipeline repeats exactly, across restores too. "
          "An input that ends is dropped and the others' weights renormalised, or, with "
          "stop_on_empty_dataset=True, the dataset ends there.")
      .def_static(
          "choose_from_datasets",
          [](const py::object& datasets, const PyDataset& choice_dataset,
             bool stop_on_empty_dataset) {
            std::vector<Dataset> inputs = DatasetsOf(datasets, "choose_from_datasets: datasets");
            if (inputs.empty()) throw py::value_error("choose_from_datasets: no datasets");
            CheckSameDTypes(inputs, "choose_from_datasets");
            return Wrap(
                Dataset::ChooseFromDatasets(std::move(inputs), choice_dataset.dataset,
                                            {.stop_on_empty_dataset = stop_on_empty_dataset}));
          },
          py::arg("datasets"), py::arg("choice_dataset"), py::arg("stop_on_empty_dataset") = true,
          "tf.data.Dataset.choose_from_datasets: element k from datasets[choice_dataset's k-th "
          "element], an int64 scalar in [0, len(datasets)). A choice of an input that has ended "
          "ends the dataset (stop_on_empty_dataset=True), or is skipped (False).");
}

void RegisterTransformations(py::class_<PyDataset>& c) {
  c.def(
       "map",
       [](const PyDataset& self, const py::object& map_func, std::optional<int> num_parallel_calls,
          std::optional<bool> deterministic) {
         MapOptions options{
             .num_parallel_calls = ParallelismOf(num_parallel_calls, "num_parallel_calls"),
             .deterministic = deterministic};
         if (std::optional<PyOp> op = BuiltinOf(map_func)) {
           options.output_signature = OutputSpec(*op, self.dataset.element_spec());
           PyDataset out = Wrap(self.dataset.Map(CompileOp(*op), options));
           out.last_map = PyDataset::BuiltinMap{self.dataset, *std::move(op), options};
           return out;
         }
         if (!PyCallable_Check(map_func.ptr())) {
           throw py::type_error(
               "map_func must be a sluice.ops function, a list of them, or a callable");
         }
         return Wrap(self.dataset.Map(PythonMapFn(map_func), options));
       },
       py::arg("map_func"), py::arg("num_parallel_calls") = py::none(),
       py::arg("deterministic") = py::none(),
       "tf.data.Dataset.map. map_func is a sluice.ops function (C++, no GIL), a list of them, or "
       "a Python callable (called with the components, under the GIL).")
      .def(
          "interleave",
          [](const PyDataset& self, const py::object& map_func, std::optional<int> cycle_length,
             std::optional<int> block_length, std::optional<int> num_parallel_calls,
             std::optional<bool> deterministic) {
            InterleaveOptions options;
            if (cycle_length) options.cycle_length = *cycle_length;
            if (block_length) options.block_length = *block_length;
            options.num_parallel_calls = ParallelismOf(num_parallel_calls, "num_parallel_calls");
            options.deterministic = deterministic;
            return Wrap(self.dataset.Interleave(PythonDatasetFn(map_func), options));
          },
          py::arg("map_func"), py::arg("cycle_length") = py::none(),
          py::arg("block_length") = py::none(), py::arg("num_parallel_calls") = py::none(),
          py::arg("deterministic") = py::none(),
          "tf.data.Dataset.interleave: map_func(element) returns a sluice.Dataset, e.g. "
          "sluice.Dataset.tfrecord. cycle_length None is AUTOTUNE.")
      .def(
          "flat_map",
          [](const PyDataset& self, const py::object& map_func) {
            return Wrap(self.dataset.FlatMap(PythonDatasetFn(map_func, "flat_map function")));
          },
          py::arg("map_func"),
          "tf.data.Dataset.flat_map: map_func(element) returns a sluice.Dataset, whose elements "
          "follow one after the other, dataset after dataset.")
      .def(
          "filter",
          [](const PyDataset& self, const py::object& predicate) {
            return Wrap(self.dataset.Filter(PythonPredicateFn(predicate)));
          },
          py::arg("predicate"), "tf.data.Dataset.filter with a Python predicate.")
      .def(
          "shuffle",
          [](const PyDataset& self, int64_t buffer_size, std::optional<uint64_t> seed,
             std::optional<bool> reshuffle_each_iteration) {
            return Wrap(self.dataset.Shuffle(
                buffer_size,
                {.seed = seed,
                 .reshuffle_each_iteration = reshuffle_each_iteration.value_or(true)}));
          },
          py::arg("buffer_size"), py::arg("seed") = py::none(),
          py::arg("reshuffle_each_iteration") = py::none(), "tf.data.Dataset.shuffle.")
      .def(
          "batch",
          [](const PyDataset& self, int64_t batch_size, bool drop_remainder,
             std::optional<int> num_parallel_calls) {
            if (batch_size < 1) throw py::value_error("batch_size must be >= 1");
            const BatchOptions options{
                .drop_remainder = drop_remainder,
                .num_parallel_calls = ParallelismOf(num_parallel_calls, "num_parallel_calls")};
            if (const auto& map = self.last_map) {
              // The same Map, writing into the rows of this Batch.
              return Wrap(map->input.Map(CompileOp(map->op, batch_size), map->options)
                              .Batch(batch_size, options));
            }
            return Wrap(self.dataset.Batch(batch_size, options));
          },
          py::arg("batch_size"), py::arg("drop_remainder") = false,
          py::arg("num_parallel_calls") = py::none(),
          "tf.data.Dataset.batch: every component stacked along a new first dimension.")
      .def(
          "padded_batch",
          [](const PyDataset& self, int64_t batch_size, const py::object& padded_shapes,
             const py::object& padding_values, bool drop_remainder) {
            if (batch_size < 1) throw py::value_error("batch_size must be >= 1");
            PaddedBatchOptions options;
            options.drop_remainder = drop_remainder;
            const auto is_sequence = [](py::handle h) {
              return py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h);
            };
            if (!padded_shapes.is_none()) {
              if (!is_sequence(padded_shapes)) {
                throw py::type_error(
                    "padded_shapes: a shape (a list of ints or None) or a tuple of them, one per "
                    "component");
              }
              // One shape per component, or, as tf.data takes it for a dataset of one component,
              // that component's shape itself ([5], [None]); None (or -1) pads that dimension
              // to the batch's longest.
              bool one_shape = true;  // every item a dimension: an int (not an array) or None
              for (py::handle item : padded_shapes) {
                one_shape = one_shape && (item.is_none() || (PyIndex_Check(item.ptr()) &&
                                                             !py::hasattr(item, "__len__")));
              }
              const py::list shapes =
                  one_shape ? py::list(py::make_tuple(padded_shapes)) : py::list(padded_shapes);
              for (py::handle shape : shapes) {
                std::vector<int64_t> dims;
                for (py::handle d : shape) {
                  if (d.is_none()) {
                    dims.push_back(-1);
                    continue;
                  }
                  // Any int-like dimension (a NumPy integer, an array's entries).
                  const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(d.ptr()));
                  if (!index) throw py::error_already_set();
                  dims.push_back(index.cast<int64_t>());
                }
                options.padded_shapes.push_back(std::move(dims));
              }
            }
            if (!padding_values.is_none()) {
              // A value per component, or one value for a dataset of one component.
              if (is_sequence(padding_values)) {
                for (py::handle v : padding_values) {
                  options.padding_values.push_back(TensorFromPython(v));
                }
              } else {
                options.padding_values.push_back(TensorFromPython(padding_values));
              }
            }
            return Wrap(self.dataset.PaddedBatch(batch_size, std::move(options)));
          },
          py::arg("batch_size"), py::arg("padded_shapes") = py::none(),
          py::arg("padding_values") = py::none(), py::arg("drop_remainder") = false,
          "tf.data.Dataset.padded_batch: padded_shapes and padding_values one per component (a "
          "tuple), or for one component its shape ([5], [None]) and value; None dimensions padded "
          "to the batch's longest; values default to zeros.")
      .def(
          "unbatch", [](const PyDataset& self) { return Wrap(self.dataset.Unbatch()); },
          "tf.data.Dataset.unbatch.")
      .def(
          "window",
          [](const PyDataset& self, int64_t size, std::optional<int64_t> shift, int64_t stride,
             bool drop_remainder) {
            if (size < 1 || (shift && *shift < 1) || stride < 1) {
              throw py::value_error(absl::StrCat("window(size=", size,
                                                 ", shift=", shift ? absl::StrCat(*shift) : "None",
                                                 ", stride=", stride, "): each must be >= 1"));
            }
            return Wrap(self.dataset.Window(
                size, {.shift = shift, .stride = stride, .drop_remainder = drop_remainder}));
          },
          py::arg("size"), py::arg("shift") = py::none(), py::arg("stride") = 1,
          py::arg("drop_remainder") = false,
          "tf.data.Dataset.window, each window's elements stacked along a new first dimension "
          "(what tf.data's window(...).flat_map(lambda w: w.batch(size)) gives: sluice's elements "
          "are tensors, not datasets). Window k holds input elements k*shift + i*stride, "
          "i < size; shift None is size; the last windows are shorter unless drop_remainder.")
      .def(
          "scan",
          [](const PyDataset& self, const py::object& initial_state, const py::object& scan_func) {
            if (!PyCallable_Check(scan_func.ptr())) {
              throw py::type_error("scan: scan_func must be a callable");
            }
            return Wrap(
                self.dataset.Scan(ElementFromPython(initial_state), PythonScanFn(scan_func)));
          },
          py::arg("initial_state"), py::arg("scan_func"),
          "tf.data.Dataset.scan: scan_func(state, element) returns (new_state, output_element), "
          "called under the GIL as map's Python functions. The state and the element are each a "
          "value, or a tuple of values when they have several components (NumPy arrays, as map's "
          "arguments); initial_state a value or a tuple (converted as from_tensors'). The state "
          "is saved with the iterator's position by state_dict().")
      .def(
          "prefetch",
          [](const PyDataset& self, int64_t buffer_size) {
            return Wrap(self.dataset.Prefetch(buffer_size));
          },
          py::arg("buffer_size"), "tf.data.Dataset.prefetch (AUTOTUNE lets it size the buffer).")
      .def(
          "prefetch_to_device",
          [](const PyDataset& self, const py::object& device, int64_t buffer_size) {
            const Device d = DeviceFromPython(device);
            if (buffer_size < 1) {
              throw py::value_error(
                  absl::StrCat("prefetch_to_device: buffer_size must be >= 1, not ", buffer_size));
            }
            absl::StatusOr<train::backend::Backend*> backend;
            {
              ReleaseGil release;  // a CUDA device loads the plugin: seconds
              backend = train::backend::BackendFor(d);
            }
            if (!backend.ok()) ThrowStatus(backend.status());
            py::object out =
                py::cast(Wrap(train::data::PrefetchToDevice(self.dataset, d, buffer_size)));
            // Where its elements live: sluice/__init__.py refuses the transformations that would
            // read them on the host after it.
            if (!d.is_cpu()) out.attr("_device") = d.DebugString();
            return out;
          },
          py::arg("device"), py::arg("buffer_size") = 2,
          "tf.data.experimental.prefetch_to_device, as the pipeline's last step: a thread of its "
          "own copies up to buffer_size elements ahead to `device` ('cuda:0'), from page-locked "
          "memory on a copy stream, while the consumer computes. The components are then tensors "
          "on that device: torch.from_dlpack(x) and jax.dlpack.from_dlpack(x) take them without "
          "a copy, ordered after the copy on the stream they pass. On 'cpu' it is prefetch.")
      .def(
          "repeat",
          [](const PyDataset& self, std::optional<int64_t> count) {
            return Wrap(self.dataset.Repeat(count.value_or(-1)));
          },
          py::arg("count") = py::none(), "tf.data.Dataset.repeat; None repeats forever.")
      .def(
          "take",
          [](const PyDataset& self, int64_t count) { return Wrap(self.dataset.Take(count)); },
          py::arg("count"), "tf.data.Dataset.take.")
      .def(
          "skip",
          [](const PyDataset& self, int64_t count) { return Wrap(self.dataset.Skip(count)); },
          py::arg("count"), "tf.data.Dataset.skip.")
      .def(
          "shard",
          [](const PyDataset& self, int64_t num_shards, int64_t index) {
            if (num_shards < 1 || index < 0 || index >= num_shards) {
              throw py::value_error(absl::StrCat("shard(", num_shards, ", ", index,
                                                 "): need num_shards >= 1 and 0 <= index < "
                                                 "num_shards"));
            }
            return Wrap(self.dataset.Shard(num_shards, index));
          },
          py::arg("num_shards"), py::arg("index"), "tf.data.Dataset.shard.")
      .def(
          "cache",
          [](const PyDataset& self, const FilePath& filename) {
            return Wrap(self.dataset.Cache(filename.value));
          },
          py::arg("filename") = "", "tf.data.Dataset.cache: in memory, or in files at filename.")
      .def(
          "concatenate",
          [](const PyDataset& self, const PyDataset& other) {
            CheckSameDTypes(self.dataset.element_spec(), other.dataset.element_spec());
            return Wrap(self.dataset.Concatenate(other.dataset));
          },
          py::arg("dataset"),
          "tf.data.Dataset.concatenate. Elements of other dtypes or counts of components are a "
          "TypeError here when both sides' element_spec know them, as tf.data's; else an error "
          "at the first such element.")
      .def(
          "enumerate",
          [](const PyDataset& self, int64_t start) { return Wrap(self.dataset.Enumerate(start)); },
          py::arg("start") = 0, "tf.data.Dataset.enumerate: an int64 counter first.")
      .def(
          "ignore_errors", [](const PyDataset& self) { return Wrap(self.dataset.IgnoreErrors()); },
          "tf.data.Dataset.ignore_errors: drops the elements whose production failed.")
      .def(
          "with_options",
          [](const PyDataset& self, const Options& options) {
            return Wrap(self.dataset.WithOptions(options));
          },
          py::arg("options"), "tf.data.Dataset.with_options(sluice.Options(...)).");
}

}  // namespace

int ParallelismOf(const std::optional<int>& n, const char* name) {
  if (!n) return 1;
  if (*n != kAutotune && *n < 1) {
    throw py::value_error(absl::StrCat(name, " must be >= 1 or sluice.AUTOTUNE, not ", *n));
  }
  return *n;
}

std::optional<std::string> PathOf(py::handle value) {
  if (py::isinstance<py::bytes>(value)) return value.cast<std::string>();
  if (!py::isinstance<py::str>(value) && !py::hasattr(value, "__fspath__")) return std::nullopt;
  return py::module_::import("os").attr("fsencode")(value).cast<std::string>();
}

namespace {

[[noreturn]] void ThrowNotPaths(const char* what, py::handle value) {
  throw py::type_error(
      absl::StrCat(what, " must be a str, bytes or os.PathLike, or a list of them; ", "got ",
                   std::string(py::str(value.get_type().attr("__name__")))));
}

}  // namespace

std::vector<std::string> StringsOf(const py::object& value, const char* what) {
  if (std::optional<std::string> one = PathOf(value)) return {*std::move(one)};
  if (!py::isinstance<py::iterable>(value)) ThrowNotPaths(what, value);
  std::vector<std::string> out;
  for (py::handle item : value) {
    std::optional<std::string> path = PathOf(item);
    if (!path) ThrowNotPaths(what, item);
    out.push_back(*std::move(path));
  }
  return out;
}

std::optional<Compression> CompressionOf(const std::optional<std::string>& type) {
  if (!type) return std::nullopt;
  absl::StatusOr<Compression> c = CompressionFromName(*type);
  if (!c.ok()) ThrowStatus(c.status());
  return *c;
}

void RegisterDataset(py::module_& m) {
  RegisterOptions(m);
  m.attr("AUTOTUNE") = kAutotune;
  m.attr("INFINITE_CARDINALITY") = kInfiniteCardinality;
  m.attr("UNKNOWN_CARDINALITY") = kUnknownCardinality;
  py::class_<PyDataset> c(m, "Dataset", py::dynamic_attr(), R"doc(
A pipeline, declared with tf.data's names; iter() runs it in C++.

Elements are tuples of components (a single component is yielded as itself). Numeric
components leave as sluice.Tensor (NumPy, DLPack, no copy), bytes as bytes.
)doc");
  RegisterSources(c);
  RegisterTransformations(c);
  RegisterFileDatasets(c);
  c.def_property_readonly(
       "element_spec",
       [](const PyDataset& self) -> py::object {
         const ElementSpec spec = self.dataset.element_spec();
         if (!spec.known()) return py::none();
         py::tuple components(spec.components().size());
         for (size_t i = 0; i < spec.components().size(); ++i) {
           const TensorSpec& t = spec.components()[i];
           py::object shape = py::none();
           if (!t.shape.unknown_rank()) {
             py::list dims;
             for (int64_t d : t.shape.dims()) {
               dims.append(d < 0 ? py::object(py::none()) : py::object(py::int_(d)));
             }
             shape = py::tuple(dims);
           }
           components[i] = py::make_tuple(std::string(DTypeName(t.dtype)), shape);
         }
         // One component is yielded as itself: its spec is the pair itself, as tf.data's.
         if (components.size() == 1) return components[0];
         return components;
       },
       "tf.data's element_spec: a (dtype, shape) pair for a dataset of one component (whose "
       "elements are the values themselves), else a tuple of them, one per component; None for "
       "an unknown dimension or rank; None where a Python or built-in function makes the "
       "elements (sluice cannot trace it, as tf.data does).")
      .def(
          "cardinality", [](const PyDataset& self) { return self.dataset.Cardinality(); },
          "The number of elements, or INFINITE_CARDINALITY (-1), UNKNOWN_CARDINALITY (-2).")
      // As tf.data's: a dataset is true even where len() would raise or give 0.
      .def("__bool__", [](const PyDataset&) { return true; })
      .def(
          "__len__",
          [](const PyDataset& self) {
            const int64_t n = self.dataset.Cardinality();
            // tf.data's messages: len() of an infinite or unknown dataset is a TypeError.
            if (n == kInfiniteCardinality) throw py::type_error("The dataset is infinite.");
            if (n < 0) {
              throw py::type_error(
                  "The dataset length is unknown (a filter, or an input whose size only "
                  "reading tells); cardinality() says so without raising.");
            }
            return n;
          },
          "tf.data's len(): the number of elements; TypeError when infinite or unknown.")
      .def("__iter__", [](const PyDataset& self) { return MakePyIterator(self.dataset); })
      .def("__repr__",
           [](const PyDataset& self) {
             return "sluice.Dataset(" + self.dataset.DebugString() + ")";
           })
      .def(py::pickle(
          [](const PyDataset&) -> py::tuple {
            throw py::type_error(
                "sluice.Dataset cannot be pickled: it holds C++ functions and iterator state; "
                "build the pipeline in each process instead (e.g. in a DataLoader worker's "
                "worker_init_fn), or save its position with iter(ds).state_dict()");
          },
          [](const py::tuple&) -> PyDataset { throw py::type_error("sluice.Dataset"); }));
}

}  // namespace sluice::python
