#include "train/autodiff/tape.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/trace_recorder.h"
#include "train/autodiff/check_numerics.h"
#include "train/autodiff/variable.h"
#include "train/backend/backend.h"
#include "train/backend/transfer.h"

namespace sluice::train::autodiff {
namespace {

thread_local std::vector<Tape*> active_tapes;
thread_local int pause_depth = 0;

// Ones shaped and placed like `like`: the seed of the backward pass.
absl::StatusOr<Tensor> OnesLike(const Tensor& like) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * b, backend::BackendFor(like.device()));
  SLUICE_ASSIGN_OR_RETURN(Tensor t, b->Allocate(DType::kFloat32, like.shape()));
  SLUICE_RETURN_IF_ERROR(b->Fill(t, 1.0f));
  return t;
}

absl::Status AccumulateInto(Tensor& acc, const Tensor& g) {
  SLUICE_ASSIGN_OR_RETURN(backend::Backend * b, backend::BackendFor("Tape", {&acc, &g}));
  return b->Axpby(1.0f, g, 1.0f, acc);
}

}  // namespace

Tape::Tape(TapeOptions options) : options_(options) { active_tapes.push_back(this); }

Tape::~Tape() {
  auto it = std::find(active_tapes.begin(), active_tapes.end(), this);
  if (it != active_tapes.end()) active_tapes.erase(it);
}

Tape::Key Tape::KeyOf(const Tensor& tensor) {
  auto dims = tensor.shape().dims();
  return {tensor.raw_data(), std::vector<int64_t>(dims.begin(), dims.end())};
}

int Tape::Find(const Tensor& tensor) const {
  auto it = ids_.find(KeyOf(tensor));
  if (it == ids_.end()) return -1;
  // The same Buffer (even if freed since, its control block stays while the entry refers to it),
  // not another one at the address a freed one had.
  const std::weak_ptr<Buffer>& recorded = entries_[it->second].buffer;
  const std::shared_ptr<Buffer>& buffer = tensor.buffer();
  const bool same = !recorded.owner_before(buffer) && !buffer.owner_before(recorded);
  return same ? it->second : -1;
}

void Tape::Watch(const Tensor& tensor) {
  if (Find(tensor) >= 0) return;
  ids_[KeyOf(tensor)] = static_cast<int>(entries_.size());
  entries_.push_back({tensor.buffer(), tensor.shape(), {}, nullptr, std::string(), nullptr});
}

bool Tape::IsTracked(const Tensor& tensor) const { return Find(tensor) >= 0; }

void Tape::Record(absl::Span<const Tensor> inputs, const Tensor& output,
                  const BackwardFn& backward) {
  std::vector<int> ids;
  bool any = false;
  for (const Tensor& in : inputs) {
    ids.push_back(Find(in));
    any = any || ids.back() >= 0;
  }
  if (!any) return;
  ids_[KeyOf(output)] = static_cast<int>(entries_.size());
  entries_.push_back({output.buffer(), output.shape(), std::move(ids), backward,
                      CheckNumericsEnabled() ? LastCheckedOp() : std::string(), LastOpName()});
}

absl::Status Tape::CheckGradientArgs(const Tensor& target,
                                     const std::optional<Tensor>& output_gradient) const {
  if (used_) {
    return absl::FailedPreconditionError(
        "Tape::Gradient: a non-persistent tape can compute one gradient only; "
        "construct it with {.persistent = true} to call Gradient again");
  }
  // A bfloat16 target is an inner segment's output under mixed_bfloat16 (Recompute's), whose
  // gradient its consumer gives in bfloat16.
  const bool bf16 = target.dtype() == DType::kBFloat16 && output_gradient.has_value();
  if (target.dtype() != DType::kFloat32 && !bf16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Tape::Gradient: target must be float32 (or bfloat16 with an output_gradient), got ",
        DTypeName(target.dtype())));
  }
  if (output_gradient &&
      (output_gradient->dtype() != target.dtype() || output_gradient->shape() != target.shape())) {
    return absl::InvalidArgumentError(
        absl::StrCat("Tape::Gradient: output_gradient must be ", DTypeName(target.dtype()),
                     target.shape().DebugString(), ", got ", DTypeName(output_gradient->dtype()),
                     output_gradient->shape().DebugString()));
  }
  return absl::OkStatus();
}

std::vector<char> Tape::MarkNeeded(const std::vector<int>& source_ids) const {
  // Entries run in execution order, a topological order: one forward sweep finds every entry
  // that a source reaches.
  std::vector<char> needed(entries_.size(), 0);
  for (int id : source_ids) {
    if (id >= 0) needed[id] = 1;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (int in : entries_[i].inputs) {
      if (in >= 0 && needed[in]) needed[i] = 1;
    }
  }
  return needed;
}

absl::Status Tape::Backprop(int target_id, const std::vector<char>& needed,
                            const std::vector<char>& is_source, Grads& grads,
                            const std::function<absl::Status(int)>& after_entry) {
  PauseRecording pause;
  // Entry k is done once the walk is past it: every op that read its output came later and has
  // run its backward function, and its gradient has been handed on.
  auto done = [&](int k) -> absl::Status {
    if (after_entry) SLUICE_RETURN_IF_ERROR(after_entry(k));
    // A non-persistent tape never walks again: dropping the entry's backward closure (with the
    // tensors it captured) now frees the activations progressively instead of at the
    // end of the walk. Recompute's blocks rerun their forward pass during the walk, and that
    // memory is then free for them. Only entries before k are read from here on (an op's inputs
    // were recorded before it), so the released ones are never touched again.
    if (!options_.persistent) {
      entries_[k].backward = nullptr;
    }
    return absl::OkStatus();
  };
  for (int i = target_id; i >= 0; --i) {
    if (i < target_id) SLUICE_RETURN_IF_ERROR(done(i + 1));
    Entry& e = entries_[i];
    if (!grads[i] || !e.backward) continue;
    bool any_needed = false;
    for (int in : e.inputs) any_needed = any_needed || (in >= 0 && needed[in]);
    if (!any_needed) continue;
    // Entry i's gradient is spent unless a source wants it: handed over, it is freed as soon as
    // the backward function lets go of it, and a gradient passed straight through (Add,
    // Reshape) is owned by in_grads alone.
    Tensor grad = *grads[i];
    if (!is_source[i]) grads[i].reset();
    absl::StatusOr<Grads> computed;
    {
      profiler::Span span("backward", e.op_name != nullptr ? e.op_name : "op");
      computed = e.backward(std::move(grad));
    }
    SLUICE_ASSIGN_OR_RETURN(Grads in_grads, std::move(computed));
    if (in_grads.size() != e.inputs.size()) {
      return absl::InternalError(absl::StrCat("Tape::Gradient: a backward function returned ",
                                              in_grads.size(), " gradients for ", e.inputs.size(),
                                              " inputs"));
    }
    for (size_t k = 0; k < in_grads.size(); ++k) {
      const int in = e.inputs[k];
      if (in < 0 || !needed[in] || !in_grads[k]) continue;
      SLUICE_RETURN_IF_ERROR(CheckGradientNumerics(e.op, *in_grads[k]));
      SLUICE_RETURN_IF_ERROR(Accumulate(in, std::move(*in_grads[k]), grads));
    }
  }
  if (target_id >= 0) SLUICE_RETURN_IF_ERROR(done(0));
  return absl::OkStatus();
}

absl::Status Tape::Accumulate(int id, Tensor grad, Grads& grads) const {
  if (grad.shape() != entries_[id].shape) {
    return absl::InternalError(
        absl::StrCat("Tape::Gradient: gradient shape ", grad.shape().DebugString(),
                     " differs from its input's ", entries_[id].shape.DebugString()));
  }
  if (!grads[id]) {
    // Kept as it is, even when shared (an Add hands the same gradient to both operands): a copy
    // is made only if another gradient must be added to it (copy on write).
    grads[id] = std::move(grad);
  } else if (grads[id]->buffer().use_count() == 1) {
    SLUICE_RETURN_IF_ERROR(AccumulateInto(*grads[id], grad));
  } else if (grad.buffer().use_count() == 1) {
    // The accumulator is shared, the new gradient is not: add into the new one instead (the same
    // sum, bit for bit: float addition of two terms commutes).
    SLUICE_RETURN_IF_ERROR(AccumulateInto(grad, *grads[id]));
    grads[id] = std::move(grad);
  } else {
    SLUICE_ASSIGN_OR_RETURN(Tensor sum, backend::Clone(*grads[id]));
    SLUICE_RETURN_IF_ERROR(AccumulateInto(sum, grad));
    grads[id] = std::move(sum);
  }
  return absl::OkStatus();
}

absl::Status Tape::Own(std::optional<Tensor>& grad) {
  if (grad && grad->buffer().use_count() > 1) {
    SLUICE_ASSIGN_OR_RETURN(grad, backend::Clone(*grad));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tape::Grads> Tape::CollectResults(const std::vector<int>& source_ids, Grads& grads,
                                                 bool reported) {
  // The gradient moves to the first listing of its source; a source listed again gets a copy.
  Grads result(source_ids.size());
  std::vector<int> first_listing(entries_.size(), -1);
  for (size_t s = 0; s < source_ids.size(); ++s) {
    const int id = source_ids[s];
    if (id < 0) continue;
    if (first_listing[id] >= 0) {
      const std::optional<Tensor>& first = result[first_listing[id]];
      if (first) {
        SLUICE_ASSIGN_OR_RETURN(result[s], backend::Clone(*first));
      }
    } else if (grads[id]) {
      first_listing[id] = static_cast<int>(s);
      result[s] = std::move(grads[id]);
      // Reported ones were made owned then, and the hook may hold them: they must come back as
      // they are.
      if (!reported) SLUICE_RETURN_IF_ERROR(Own(result[s]));
    }
  }
  return result;
}

// The micrograd core: seed the target, walk the tape backwards through what the sources reach,
// hand each source its accumulated gradient.
absl::StatusOr<Tape::Grads> Tape::Gradient(Tensor target, absl::Span<const Tensor> sources,
                                           std::optional<Tensor> output_gradient) {
  return Gradient(std::move(target), sources, std::move(output_gradient), nullptr);
}

absl::StatusOr<Tape::Grads> Tape::Gradient(Tensor target, const std::vector<Variable*>& sources,
                                           std::optional<Tensor> output_gradient,
                                           const GradientReadyFn& on_ready) {
  std::vector<Tensor> values;
  values.reserve(sources.size());
  // mutable_value(): reading value() here would watch a variable after the fact.
  for (Variable* v : sources) values.push_back(v->mutable_value());
  return Gradient(std::move(target), values, std::move(output_gradient), on_ready);
}

absl::StatusOr<Tensor> Tape::SeedGradient(const Tensor& target, bool target_is_source,
                                          std::optional<Tensor>& output_gradient) {
  if (!output_gradient) return OnesLike(target);
  // Handed back as the target's own gradient: the caller's seed must not come back.
  if (target_is_source) return backend::Clone(*output_gradient);
  // Only read: backward functions never write into their gradient, and Accumulate copies a
  // gradient it shares with anyone (the caller, here) before adding into it. No copy saves a
  // tensor the size of the target (Recompute seeds each segment's backward so).
  Tensor seed = *std::move(output_gradient);
  output_gradient.reset();
  return seed;
}

std::vector<std::vector<size_t>> Tape::SourcesFinalAfter(const std::vector<int>& source_ids,
                                                         const std::vector<char>& is_source,
                                                         int target_id) const {
  std::vector<std::vector<size_t>> final_after(entries_.size());
  std::vector<int> first_reader(entries_.size(), -1);
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (int in : entries_[i].inputs) {
      if (in >= 0 && is_source[in] && first_reader[in] < 0) first_reader[in] = static_cast<int>(i);
    }
  }
  std::vector<char> listed(entries_.size(), 0);
  for (size_t s = 0; s < source_ids.size(); ++s) {
    const int id = source_ids[s];
    if (id < 0 || listed[id]) continue;
    listed[id] = 1;
    // A source computed by an op (not a leaf) is read again by its own backward function.
    if (!entries_[id].backward && first_reader[id] >= 0 && first_reader[id] <= target_id) {
      final_after[first_reader[id]].push_back(s);
    }
  }
  return final_after;
}

void Tape::Release() {
  used_ = true;
  entries_.clear();
  ids_.clear();
}

absl::StatusOr<Tape::Grads> Tape::Gradient(Tensor target, absl::Span<const Tensor> sources,
                                           std::optional<Tensor> output_gradient,
                                           const GradientReadyFn& on_ready) {
  SLUICE_RETURN_IF_ERROR(CheckGradientArgs(target, output_gradient));
  Grads result(sources.size());
  const int target_id = Find(target);
  if (target_id >= 0) {
    std::vector<int> source_ids;  // -1 for a source the tape never saw
    for (const Tensor& s : sources) source_ids.push_back(Find(s));
    std::vector<char> is_source(entries_.size(), 0);
    for (int id : source_ids) {
      if (id >= 0) is_source[id] = 1;
    }
    Grads grads(entries_.size());
    SLUICE_ASSIGN_OR_RETURN(grads[target_id],
                            SeedGradient(target, is_source[target_id] != 0, output_gradient));
    target = Tensor();  // not read again: the ops that captured it decide how long it lives
    const std::vector<char> needed = MarkNeeded(source_ids);
    std::function<absl::Status(int)> after_entry;
    std::vector<char> reported(sources.size(), 0);
    auto report = [&](size_t s) -> absl::Status {
      const int id = source_ids[s];
      if (reported[s] || id < 0 || !grads[id]) return absl::OkStatus();
      reported[s] = 1;
      SLUICE_RETURN_IF_ERROR(Own(grads[id]));
      on_ready(s, *grads[id]);
      return absl::OkStatus();
    };
    if (on_ready) {
      after_entry = [&, final_after = SourcesFinalAfter(source_ids, is_source, target_id)](
                        int i) -> absl::Status {
        for (size_t s : final_after[i]) SLUICE_RETURN_IF_ERROR(report(s));
        return absl::OkStatus();
      };
    }
    const absl::Status walked = Backprop(target_id, needed, is_source, grads, after_entry);
    if (!walked.ok()) {
      // A non-persistent tape released what the walk passed: it cannot be walked again.
      if (!options_.persistent) Release();
      return walked;
    }
    if (on_ready) {
      // The rest: the target itself, sources read only by ops the walk skipped.
      std::vector<char> listed(entries_.size(), 0);
      for (size_t s = 0; s < source_ids.size(); ++s) {
        if (source_ids[s] < 0 || listed[source_ids[s]]) continue;
        listed[source_ids[s]] = 1;
        SLUICE_RETURN_IF_ERROR(report(s));
      }
    }
    SLUICE_ASSIGN_OR_RETURN(result, CollectResults(source_ids, grads, on_ready != nullptr));
  }
  if (!options_.persistent) Release();
  return result;
}

void RecordOperation(absl::Span<const Tensor> inputs, const Tensor& output,
                     const BackwardFn& backward) {
  if (pause_depth > 0) return;
  for (Tape* tape : active_tapes) tape->Record(inputs, output, backward);
}

bool ShouldRecord(absl::Span<const Tensor> inputs) {
  if (pause_depth > 0) return false;
  for (Tape* tape : active_tapes) {
    for (const Tensor& in : inputs) {
      if (tape->IsTracked(in)) return true;
    }
  }
  return false;
}

PauseRecording::PauseRecording() { ++pause_depth; }
PauseRecording::~PauseRecording() { --pause_depth; }

bool RecordingActive() { return pause_depth == 0 && !active_tapes.empty(); }

IsolatedRecording::IsolatedRecording()
    : hidden_tapes_(std::move(active_tapes)), hidden_pause_depth_(pause_depth) {
  active_tapes.clear();
  pause_depth = 0;
}

IsolatedRecording::~IsolatedRecording() {
  active_tapes = std::move(hidden_tapes_);
  pause_depth = hidden_pause_depth_;
}

absl::StatusOr<Tensor> StopGradient(const Tensor& tensor) { return backend::Clone(tensor); }

absl::StatusOr<Tensor> CustomGradient(
    absl::Span<const Tensor> inputs,
    const std::function<absl::StatusOr<std::pair<Tensor, BackwardFn>>(absl::Span<const Tensor>)>&
        fn) {
  std::pair<Tensor, BackwardFn> out;
  {
    PauseRecording pause;
    SLUICE_ASSIGN_OR_RETURN(out, fn(inputs));
  }
  // A user's forward may return an input unchanged; the output needs its own identity.
  for (const Tensor& in : inputs) {
    if (in.raw_data() == out.first.raw_data()) {
      SLUICE_ASSIGN_OR_RETURN(out.first, backend::Clone(out.first));
      break;
    }
  }
  RecordOperation(inputs, out.first, out.second);
  return out.first;
}

namespace internal {
void NotifyVariableRead(const Tensor& value) {
  if (pause_depth > 0) return;
  for (Tape* tape : active_tapes) {
    if (tape->options().watch_accessed_variables) tape->Watch(value);
  }
}
}  // namespace internal

}  // namespace sluice::train::autodiff
