#include "train/function/function.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/autodiff/tape.h"
#include "train/autodiff/variable.h"
#include "train/backend/backend.h"
#include "train/backend/trace_hooks.h"
#include "train/function/recording_backend.h"

namespace sluice::train::function {

Function::Function(Fn fn, FunctionOptions options)
    : fn_(std::move(fn)), options_(std::move(options)) {
  if (options_.max_traces < 1) options_.max_traces = 1;
}

Function::~Function() = default;

void Function::Reset() { traces_.clear(); }

size_t Function::arena_bytes() const {
  return traces_.empty() ? 0 : traces_.front().program->arena_bytes();
}

size_t Function::pinned_bytes() const {
  return traces_.empty() ? 0 : traces_.front().program->pinned_bytes();
}

int Function::device_graphs() const {
  return traces_.empty() ? 0 : traces_.front().program->device_graphs();
}

void Function::Warn(const std::string& message) const {
  if (options_.warn) {
    options_.warn(message);
  } else {
    std::fprintf(stderr, "%s\n", message.c_str());
  }
}

absl::StatusOr<Function::Signature> Function::SignatureOf(const std::vector<Tensor>& inputs) {
  Signature s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == 0) {
      s.device = inputs[i].device();
    } else if (!(inputs[i].device() == s.device)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " is on ",
                                                     inputs[i].device().DebugString(),
                                                     ", input 0 on ", s.device.DebugString()));
    }
    s.dtypes.push_back(inputs[i].dtype());
    s.shapes.push_back(inputs[i].shape());
  }
  return s;
}

bool Function::IsPartialBatchOf(const Signature& s, const Signature& traced) {
  if (s.dtypes != traced.dtypes || !(s.device == traced.device) || s.shapes.empty()) return false;
  for (size_t i = 0; i < s.shapes.size(); ++i) {
    absl::Span<const int64_t> a = s.shapes[i].dims(), b = traced.shapes[i].dims();
    if (a.empty() || a.size() != b.size() || a[0] >= b[0]) return false;
    if (!std::equal(a.begin() + 1, a.end(), b.begin() + 1)) return false;
  }
  return true;
}

std::string Function::Changes(const Signature& before, const Signature& after) {
  std::vector<std::string> changes;
  if (before.shapes.size() != after.shapes.size()) {
    changes.push_back(absl::StrCat(before.shapes.size(), " inputs -> ", after.shapes.size()));
  }
  for (size_t i = 0; i < before.shapes.size() && i < after.shapes.size(); ++i) {
    if (before.dtypes[i] != after.dtypes[i]) {
      changes.push_back(absl::StrCat("dtype ", DTypeName(before.dtypes[i]), " -> ",
                                     DTypeName(after.dtypes[i]), " at input ", i));
    }
    absl::Span<const int64_t> a = before.shapes[i].dims(), b = after.shapes[i].dims();
    if (a.size() != b.size()) {
      changes.push_back(absl::StrCat("shape ", before.shapes[i].DebugString(), " -> ",
                                     after.shapes[i].DebugString(), " at input ", i));
      continue;
    }
    for (size_t d = 0; d < a.size(); ++d) {
      if (a[d] == b[d]) continue;
      changes.push_back(absl::StrCat(d == 0 ? "batch dimension " : "dimension ",
                                     d == 0 ? "" : absl::StrCat(d, " "), a[d], " -> ", b[d],
                                     " at input ", i));
    }
  }
  if (!(before.device == after.device)) {
    changes.push_back(
        absl::StrCat("device ", before.device.DebugString(), " -> ", after.device.DebugString()));
  }
  return absl::StrJoin(changes, ", ");
}

absl::StatusOr<std::vector<Tensor>> Function::operator()(const std::vector<Tensor>& inputs) {
  // Inside another Function's trace: inlined, its kernels recorded into that trace.
  if (backend::Tracing()) return fn_(inputs);
  // A tape recording outside would get the trace's ops (whose backward functions hold the
  // recorder, gone after the trace) and nothing from a replay: refused, not a wrong gradient.
  if (autodiff::RecordingActive()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Function '", options_.name,
        "' called while a GradientTape records on this thread: a replay records nothing for it "
        "to differentiate. Open the tape inside the function (as Fit's step does), or pause "
        "recording around the call"));
  }
  SLUICE_ASSIGN_OR_RETURN(Signature signature, SignatureOf(inputs));
  // The count is the process's: another model's move retraces too (a cost, never wrong).
  if (const size_t dropped = DropTracesIfVariablesMoved(); dropped > 0) {
    Warn(absl::StrCat("Function '", options_.name,
                      "': variables moved to new storage (Module::To) since it was traced, "
                      "perhaps its own; dropping its ",
                      dropped, " trace(s) and tracing again"));
  }
  for (auto it = traces_.begin(); it != traces_.end(); ++it) {
    if (!(it->signature == signature)) continue;
    traces_.splice(traces_.begin(), traces_, it);  // most recently used first
    Trace& trace = traces_.front();
    SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(signature.device));
    for (size_t i = 0; i < inputs.size(); ++i) {
      SLUICE_RETURN_IF_ERROR(backend->Copy(inputs[i], trace.inputs[i]));
    }
    SLUICE_RETURN_IF_ERROR(trace.program->Replay());
    if (!trace.program->capture_error().ok() && !warned_capture_) {
      warned_capture_ = true;
      Warn(absl::StrCat("Function '", options_.name,
                        "': ", trace.program->capture_error().message(),
                        "; replaying those calls one by one (FunctionOptions::device_graphs)"));
    }
    ++replays_;
    return trace.outputs;
  }
  if (!traces_.empty()) {
    const Signature& last = traces_.front().signature;
    const bool partial = IsPartialBatchOf(signature, last);
    if (partial && options_.partial_batch == PartialBatch::kEager) {
      ++eager_calls_;
      return fn_(inputs);
    }
    if (!partial) {
      Warn(absl::StrCat(
          "Function '", options_.name, "': retracing (trace ", traces_made_ + 1,
          "): ", Changes(last, signature),
          ". A retrace runs the step eagerly and plans it again; keep shapes fixed (Batch with "
          "drop_remainder=true, one image size) so that every step replays one trace"));
    }
  }
  return MakeTrace(inputs, std::move(signature));
}

size_t Function::DropTracesIfVariablesMoved() {
  const uint64_t moves = autodiff::VariableMoves();
  if (moves == variable_moves_) return 0;
  variable_moves_ = moves;
  const size_t dropped = traces_.size();
  traces_.clear();
  return dropped;
}

absl::StatusOr<std::vector<Tensor>> Function::MakeTrace(const std::vector<Tensor>& inputs,
                                                        Signature signature) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * backend, backend::BackendFor(signature.device));
  Trace trace{.signature = std::move(signature)};
  // Buffers of the trace's own, so that replays never write into the caller's tensors.
  for (const Tensor& in : inputs) {
    SLUICE_ASSIGN_OR_RETURN(Tensor buffer, backend->Allocate(in.dtype(), in.shape()));
    SLUICE_RETURN_IF_ERROR(backend->Copy(in, buffer));
    trace.inputs.push_back(std::move(buffer));
  }
  RecordingBackend recorder(*backend);
  {
    backend::ScopedTracingBackend tracing(&recorder, &recorder);
    absl::StatusOr<std::vector<Tensor>> outputs = fn_(trace.inputs);
    if (!outputs.ok()) {
      return WithContext(outputs.status(),
                         absl::StrCat("Function '", options_.name, "', while tracing: "));
    }
    trace.outputs = *std::move(outputs);
  }
  // The eager results go back to this caller; replays return the arena's views of them.
  std::vector<Tensor> results = trace.outputs;
  SLUICE_ASSIGN_OR_RETURN(trace.program,
                          Program::Plan(recorder, trace.outputs, options_.device_graphs));
  ++traces_made_;
  // A move while tracing (a layer built on its model's device) is in this trace, but not in
  // the others, which may read the moved variables' old storage.
  DropTracesIfVariablesMoved();
  traces_.push_front(std::move(trace));
  if (static_cast<int>(traces_.size()) > options_.max_traces) {
    Warn(absl::StrCat("Function '", options_.name, "': ", traces_.size(),
                      " traces, over FunctionOptions::max_traces (", options_.max_traces,
                      "); dropping the least recently used"));
    traces_.pop_back();
  }
  return results;
}

}  // namespace sluice::train::function
