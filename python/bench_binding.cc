#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "dataset/node_stats.h"
#include "python/dataset_binding.h"
#include "python/errors.h"
#include "python/gil.h"
#include "tools/bench_run.h"

// sluice.bench(dataset, seconds=...): `sluice bench --json`'s report of any pipeline, as a dict.
namespace sluice::python {

namespace py = pybind11;

void RegisterBench(py::module_& m) {
  m.def(
      "bench",
      [](const PyDataset& dataset, std::optional<double> seconds, bool autotune_report) {
        // 0 ran an infinite dataset forever (RunBenchmark's "to the end"); NaN never compares.
        if (seconds && !(*seconds > 0 && std::isfinite(*seconds))) {
          throw py::value_error(absl::StrCat(
              "seconds must be a finite number > 0, or None to run to the dataset's end; got ",
              py::str(py::float_(*seconds)).cast<std::string>()));
        }
        BenchmarkOptions options;
        options.max_seconds = seconds.value_or(0);
        InterruptCheck interrupt;  // Ctrl-C, between elements
        options.check = interrupt.Check();
        absl::StatusOr<tools::bench::Run> run;
        {
          ReleaseGil release;  // Python map functions take it as they run
          run = tools::bench::RunOnce(dataset.dataset, options, std::nullopt,
                                      /*show_progress=*/false);
        }
        interrupt.ThrowIfInterrupted();
        if (!run.ok()) ThrowStatus(run.status());
        // The input read: what the sources yielded (the TFRecord records), where the command
        // line counts the records that reach its decode; the same for its pipelines.
        int64_t bytes = 0;
        for (const BenchmarkStage& stage : run->result.stages) {
          if (stage.stats.kind == NodeKind::kSource) bytes += stage.stats.bytes_produced;
        }
        std::optional<AutotuneReport> autotune;
        std::optional<tools::bench::Convergence> convergence;
        if (autotune_report) {
          autotune = run->report;
          if (run->report) convergence = tools::bench::ConvergenceOf(run->timeline);
        }
        const std::string json =
            tools::bench::ReportJson(run->result, run->result.elements, bytes,
                                     dataset.dataset.DebugString(), "cpu", autotune, convergence);
        return py::module_::import("json").attr("loads")(json);
      },
      py::arg("dataset"), py::arg("seconds") = 10.0, py::arg("autotune_report") = false,
      R"doc(
Iterates a fresh iterator of `dataset` for `seconds` (> 0; None: to its end, so give a
finite dataset; Ctrl-C stops either with KeyboardInterrupt) with AUTOTUNE, and returns
`sluice bench --json`'s report as a dict: elements_per_second (examples: a batch's first dimension), bytes, stages with their
busy time, parallelism and buffers, the bottleneck, peak_rss_bytes. autotune_report
adds AUTOTUNE's choices and the convergence time, as `sluice bench --autotune`.
)doc");
}

}  // namespace sluice::python
