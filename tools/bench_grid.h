#ifndef SLUICE_TOOLS_BENCH_GRID_H_
#define SLUICE_TOOLS_BENCH_GRID_H_

#include "dataset/benchmark.h"
#include "dataset/dataset.h"

namespace sluice::tools::bench {

// `sluice bench --grid`: every fixed configuration (Map parallelism x Prefetch buffer) for
// `seconds` each, then AUTOTUNE and the best one side by side, alternating, so that a change in
// the machine's load hits both; prints the table or one JSON object. Returns the exit status.
int RunGrid(const Dataset& dataset, BenchmarkOptions options, double seconds, bool json,
            bool terminal);

}  // namespace sluice::tools::bench

#endif  // SLUICE_TOOLS_BENCH_GRID_H_
