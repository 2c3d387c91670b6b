#ifndef SLUICE_TOOLS_BENCH_COMMAND_H_
#define SLUICE_TOOLS_BENCH_COMMAND_H_

namespace sluice::tools {

// `sluice bench --files GLOB [options]`: runs the ImageNet-style training input pipeline
// (TFRecord -> parse -> decode + random resized crop + flip + normalize -> batch -> prefetch)
// and reports images/s, input MB/s, per-stage stats, the bottleneck and peak RSS. argv[0] is
// "bench". Returns 0 on success, 1 when the pipeline failed, 2 for a bad command line.
int RunBench(int argc, char** argv);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_BENCH_COMMAND_H_
