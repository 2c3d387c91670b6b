#ifndef SLUICE_TRAIN_FUNCTION_FUNCTION_H_
#define SLUICE_TRAIN_FUNCTION_FUNCTION_H_

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "train/function/program.h"

namespace sluice::train::function {

// What a Function does with a batch smaller than the traced one in its first dimension (the last
// batch of an epoch without drop_remainder).
enum class PartialBatch {
  kEager,  // runs it eagerly, op by op: no trace is made or kept for it (the default)
  kTrace,  // traces it as a signature of its own, replayed at every later epoch's last batch
};

struct FunctionOptions {
  // Names the function in warnings and errors.
  std::string name = "function";
  // The most traces kept; the least recently used goes first, with a warning (tf.function's
  // reduce_retracing bounds its traces the same way).
  int max_traces = 8;
  PartialBatch partial_batch = PartialBatch::kEager;
  // On a backend that captures device graphs (CUDA), replays launch the step as CUDA graphs, the
  // host-work calls (a Dropout's seed, a host check) between them (Program::Plan); false
  // replays every call one by one, as on the CPU.
  bool device_graphs = true;
  // Where warnings go (a retrace and what changed, a dropped trace); stderr when empty.
  std::function<void(const std::string&)> warn;
};

// tf.function for sluice: `fn` is traced once per input signature (each input's dtype, shape and
// device) and replayed after that. The trace runs `fn` eagerly through a recording backend (its
// results are the eager ones) and plans what it recorded into a Program; a replay copies the new
// inputs into the trace's input buffers (as CUDA graphs' static inputs) and runs the Program.
//
// What `fn` may do: any ops on the inputs, the variables and constants, with a tape. What it may
// not do is refused when traced, never replayed wrong (recording_backend.h): read a value on the
// host, call Optimizer::Apply (call PrepareStep before the function and UpdateVariables in it),
// run a Dropout with no seed source. Host code in `fn` runs only while
// tracing: a counter it bumps counts traces, not calls (tf.function's classic pitfall), and a
// host value it computes is frozen in the trace. Variables must be updated in place (they are:
// Variable::Assign and the optimizers write into their buffers). A variable moved to new
// storage (Variable::MoveTo, Module::To) after a trace drops every trace, with a warning; one given
// a new tensor through mutable_value() is not noticed: write into it instead.
//
// The outputs of a replay are the trace's output tensors, overwritten by each replay: copy what
// must outlive the next call. A Function called while another is being traced is inlined into
// that trace.
class Function {
 public:
  using Fn = std::function<absl::StatusOr<std::vector<Tensor>>(const std::vector<Tensor>& inputs)>;

  explicit Function(Fn fn, FunctionOptions options = {});
  ~Function();
  Function(const Function&) = delete;
  Function& operator=(const Function&) = delete;

  absl::StatusOr<std::vector<Tensor>> operator()(const std::vector<Tensor>& inputs);

  // Drops every trace (the variables it reads changed: a layer was frozen or unfrozen).
  void Reset();

  int64_t traces_made() const { return traces_made_; }
  int64_t replays() const { return replays_; }
  int64_t eager_calls() const { return eager_calls_; }
  int traces_kept() const { return static_cast<int>(traces_.size()); }
  // The arena and escaped-output bytes of the trace used last (0 before the first).
  size_t arena_bytes() const;
  size_t pinned_bytes() const;
  // The device graphs of the trace used last (0 on the CPU, or before its first replay).
  int device_graphs() const;

 private:
  struct Signature {
    std::vector<DType> dtypes;
    std::vector<Shape> shapes;
    Device device = Device::Cpu();
    bool operator==(const Signature& o) const {
      return dtypes == o.dtypes && shapes == o.shapes && device == o.device;
    }
  };
  struct Trace {
    Signature signature;
    std::vector<Tensor> inputs;  // the buffers replays copy their inputs into
    std::vector<Tensor> outputs;
    std::unique_ptr<Program> program;
  };

  static absl::StatusOr<Signature> SignatureOf(const std::vector<Tensor>& inputs);
  // True when `s` is `traced` with a smaller first dimension in every input.
  static bool IsPartialBatchOf(const Signature& s, const Signature& traced);
  // What changed from `before` to `after`, for the retrace warning.
  static std::string Changes(const Signature& before, const Signature& after);
  absl::StatusOr<std::vector<Tensor>> MakeTrace(const std::vector<Tensor>& inputs,
                                                Signature signature);
  void Warn(const std::string& message) const;
  // Drops every trace when autodiff::VariableMoves() changed since variable_moves_: how many.
  size_t DropTracesIfVariablesMoved();

  Fn fn_;
  FunctionOptions options_;
  std::list<Trace> traces_;  // most recently used first
  int64_t traces_made_ = 0;
  int64_t replays_ = 0;
  int64_t eager_calls_ = 0;
  bool warned_capture_ = false;
  // autodiff::VariableMoves() when the traces were made: a move since leaves them reading the
  // variables' old storage, so they are dropped.
  uint64_t variable_moves_ = 0;
};

}  // namespace sluice::train::function

#endif  // SLUICE_TRAIN_FUNCTION_FUNCTION_H_
