#ifndef SLUICE_TRAIN_AUTODIFF_TAPE_H_
#define SLUICE_TRAIN_AUTODIFF_TAPE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace sluice::train::autodiff {

class Variable;

// Gradients of an op's inputs given the gradient of its output; nullopt for an
// input with no gradient (labels, indices). One entry per recorded input. The gradient is handed
// over: a function taking it by value (Recompute's) can let it go before it returns; one taking
// `const Tensor&` holds it until then.
using BackwardFn =
    std::function<absl::StatusOr<std::vector<std::optional<Tensor>>>(Tensor grad_output)>;

struct TapeOptions {
  // A persistent tape allows several Gradient() calls; otherwise the first
  // call releases the recorded ops, each as soon as the backward walk has passed it.
  bool persistent = false;
  // Trainable Variables read while the tape is active are watched without an
  // explicit Watch(), as in tf.GradientTape.
  bool watch_accessed_variables = true;
};

// Records the ops applied to watched tensors, like tf.GradientTape. A tape
// records ops run on its own thread while it exists (create and destroy it on
// one thread); tapes nest, each recording what touches its own watched tensors. A tensor is known
// by its data pointer and shape: ops always return freshly allocated tensors, and the tape keeps
// every recorded tensor alive, so an address is never reused while the tape holds it.
//
// The tape is micrograd-simple: a list of entries in execution order (which is
// a topological order), each with its inputs and a backward closure; Gradient
// walks it backwards, accumulating.
class Tape {
 public:
  explicit Tape(TapeOptions options = {});
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Makes `tensor` a source gradients can be taken with respect to.
  void Watch(const Tensor& tensor);
  // True when `tensor` is watched or was computed from a watched tensor.
  bool IsTracked(const Tensor& tensor) const;

  // d(target)/d(source) for each source, nullopt where the target does not
  // depend on the source. `output_gradient` (default: ones) seeds the
  // backward pass, so a non-scalar target gives the gradient of its sum. The tape lets go of
  // `target` before the walk, and of `output_gradient` once the first op is past: moved in, each
  // is freed as soon as nothing needs it (Recompute hands over each segment's recomputed output
  // and incoming gradient so).
  absl::StatusOr<std::vector<std::optional<Tensor>>> Gradient(
      Tensor target, absl::Span<const Tensor> sources,
      std::optional<Tensor> output_gradient = std::nullopt);

  // Called with a source's index (its first listing) and gradient as soon as that gradient is
  // final, while the backward walk goes on with the ops before it: data-parallel training
  // starts all-reducing it there (PyTorch DDP's gradient hooks). `gradient` is the very tensor
  // Gradient() returns for the source; the walk never reads or writes it again.
  using GradientReadyFn = std::function<void(size_t source, const Tensor& gradient)>;
  // As above, calling `on_ready` once for every source that gets a gradient.
  absl::StatusOr<std::vector<std::optional<Tensor>>> Gradient(Tensor target,
                                                              absl::Span<const Tensor> sources,
                                                              std::optional<Tensor> output_gradient,
                                                              const GradientReadyFn& on_ready);

  // The same with respect to variables (Module::TrainableVariables()), as
  // tf.GradientTape.gradient(loss, model.trainable_variables): nullopt for one the target does
  // not depend on, or that is frozen (a frozen variable is not watched).
  absl::StatusOr<std::vector<std::optional<Tensor>>> Gradient(
      Tensor target, const std::vector<Variable*>& sources,
      std::optional<Tensor> output_gradient = std::nullopt,
      const GradientReadyFn& on_ready = nullptr);

  // Adds an op whose `output` was computed from `inputs`, if any input is
  // tracked by this tape. Ops call RecordOperation() below instead.
  void Record(absl::Span<const Tensor> inputs, const Tensor& output, const BackwardFn& backward);

  const TapeOptions& options() const { return options_; }

 private:
  using Grads = std::vector<std::optional<Tensor>>;
  using Key = std::pair<const void*, std::vector<int64_t>>;
  // An entry does not keep its tensor alive: an activation no backward function captured (an
  // Add's operands, a segment Recompute will rebuild) is freed as soon as the forward pass is
  // done with it, as in PyTorch. `buffer` tells a live tensor from a later one that got the freed
  // address (a different Buffer).
  struct Entry {
    std::weak_ptr<Buffer> buffer;
    Shape shape;              // what a gradient of it must have
    std::vector<int> inputs;  // entry ids; -1 for an input the tape does not track
    BackwardFn backward;      // empty for a watched source
    std::string op;           // with check_numerics on: the op and layer, for its gradients
    const char* op_name;      // the op ("MatMul"), for the profiler's backward spans
  };
  static Key KeyOf(const Tensor& tensor);
  int Find(const Tensor& tensor) const;

  // The steps of Gradient().
  absl::Status CheckGradientArgs(const Tensor& target,
                                 const std::optional<Tensor>& output_gradient) const;
  // The gradient the walk starts from: `output_gradient` (taken over, or copied when the target
  // is also a source, whose gradient goes back to the caller), or ones.
  static absl::StatusOr<Tensor> SeedGradient(const Tensor& target, bool target_is_source,
                                             std::optional<Tensor>& output_gradient);
  // For a GradientReadyFn: by entry, the sources (by first listing) whose gradient is final once
  // the walk has passed that entry, the first op that read them (every later reader is done by
  // then, as the walk runs backwards).
  std::vector<std::vector<size_t>> SourcesFinalAfter(const std::vector<int>& source_ids,
                                                     const std::vector<char>& is_source,
                                                     int target_id) const;
  // Which entries lie on a path from a source (needed[i] != 0): only those need a backward call.
  std::vector<char> MarkNeeded(const std::vector<int>& source_ids) const;
  // Runs the backward functions from the target down, accumulating into `grads` (by entry).
  // `after_entry(i)`, when set, is called once entry i's backward function has run.
  absl::Status Backprop(int target_id, const std::vector<char>& needed,
                        const std::vector<char>& is_source, Grads& grads,
                        const std::function<absl::Status(int)>& after_entry);
  // Adds `grad` to entry `id`'s gradient.
  absl::Status Accumulate(int id, Tensor grad, Grads& grads) const;
  // A copy of `grad` in its place when anyone else holds it too: what a source's gradient must
  // be before it is handed out (the caller may change it in place).
  static absl::Status Own(std::optional<Tensor>& grad);
  // Moves each source's gradient out of `grads`, in the order the sources were listed, each owned
  // by the result alone unless `reported` (a GradientReadyFn had each, made owned, already).
  absl::StatusOr<Grads> CollectResults(const std::vector<int>& source_ids, Grads& grads,
                                       bool reported);
  // Ends a non-persistent tape's one use: its entries, and what they hold, are freed.
  void Release();

  TapeOptions options_;
  std::vector<Entry> entries_;
  std::map<Key, int> ids_;
  bool used_ = false;  // a non-persistent tape already gave its gradient
};

// Records an op on every active tape on this thread that tracks one of its
// inputs. Ops call this after computing their output; a user-defined op can
// too. Does nothing while recording is paused.
void RecordOperation(absl::Span<const Tensor> inputs, const Tensor& output,
                     const BackwardFn& backward);
// True when some active tape tracks one of `inputs`: ops skip building their
// backward closure otherwise.
bool ShouldRecord(absl::Span<const Tensor> inputs);

// Pauses recording on this thread for its lifetime (tf's stop_recording).
// Gradient() pauses while it runs backward closures.
class PauseRecording {
 public:
  PauseRecording();
  ~PauseRecording();
  PauseRecording(const PauseRecording&) = delete;
  PauseRecording& operator=(const PauseRecording&) = delete;
};

// True when an op run now on this thread could be recorded: some tape is active and recording is
// not paused. Recompute runs its block plainly (keeping nothing) otherwise.
bool RecordingActive();

// Hides every tape active on this thread and resumes recording for its lifetime, then restores
// both. A backward function runs paused, inside the outer tape's Gradient(); one that records a
// forward pass of its own on a fresh tape (Recompute, tf.recompute_grad) opens this scope first,
// so that its ops reach only that tape and never the outer one it is being called from (which
// must not grow while it walks its entries). Create the inner tape after this scope.
class IsolatedRecording {
 public:
  IsolatedRecording();
  ~IsolatedRecording();
  IsolatedRecording(const IsolatedRecording&) = delete;
  IsolatedRecording& operator=(const IsolatedRecording&) = delete;

 private:
  std::vector<Tape*> hidden_tapes_;
  int hidden_pause_depth_;
};

// The same values (a copy on the same device) with no history: gradients do not flow through.
absl::StatusOr<Tensor> StopGradient(const Tensor& tensor);

// tf.custom_gradient: `fn` computes the output from `inputs` (its own ops are
// not recorded) and returns it with the backward function to use instead.
absl::StatusOr<Tensor> CustomGradient(
    absl::Span<const Tensor> inputs,
    const std::function<absl::StatusOr<std::pair<Tensor, BackwardFn>>(absl::Span<const Tensor>)>&
        fn);

namespace internal {
// Called by Variable on every read: active tapes that watch accessed
// variables watch it.
void NotifyVariableRead(const Tensor& value);
}  // namespace internal

}  // namespace sluice::train::autodiff

#endif  // SLUICE_TRAIN_AUTODIFF_TAPE_H_
