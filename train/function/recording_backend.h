#ifndef SLUICE_TRAIN_FUNCTION_RECORDING_BACKEND_H_
#define SLUICE_TRAIN_FUNCTION_RECORDING_BACKEND_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "train/backend/backend.h"
#include "train/backend/trace_hooks.h"

namespace sluice::train::function {

// Where a recorded kernel's tensor argument lives. A tensor the recorder allocated (an
// intermediate of the step) is a slot: planned into the arena, or kept where it is when something
// outside the step still holds it. Any other tensor (a variable, an input buffer, a constant) is
// external and used as it was.
struct Argument {
  int slot = -1;      // -1: external
  size_t offset = 0;  // bytes into the slot's block
  DType dtype = DType::kFloat32;
  Shape shape;
  Tensor external;  // when slot is -1
};

// One recorded kernel: `run` calls the real backend with the arguments' tensors, in order.
struct RecordedCall {
  const char* name = "";
  std::vector<Argument> args;
  std::function<absl::Status(backend::Backend&, std::vector<Tensor>&)> run;
  // Pool2DForward returns a workspace the backend allocated itself: at replay the new one goes to
  // slot `produces` (-1 for the other kernels) for the calls that read it.
  int produces = -1;
  std::function<absl::StatusOr<Tensor>(backend::Backend&, std::vector<Tensor>&)> run_producing;
  // A host check (backend::CheckAtEveryReplay): its error stops a replay as it is.
  bool check = false;
  // The call does host work at each replay (draws a Dropout seed, copies to or from the host,
  // checks values on the host), so no device graph may freeze it: it runs between graphs.
  bool host_work = false;
};

// A block a traced step allocated: `bytes` long, used by calls first..last.
struct RecordedSlot {
  size_t bytes = 0;
  std::weak_ptr<Buffer> buffer;  // the block while tracing; alive after it when it escaped
  bool produced = false;         // a workspace a kernel returned (RecordedCall::produces)
  int first = -1, last = -1;
};

// The backend a step is traced through: each call runs on `inner` at once, as eagerly, and is
// recorded with its arguments. What a replay could not repeat is refused here with a message,
// never replayed wrong: reading a tensor on the host (a copy to the host, Synchronize), the
// copies that overlap compute (the input pipeline's), and a Dropout whose seed has no source.
// The optimizer updates are recorded like any kernel: they read their step's scalars from a
// device tensor (Optimizer::PrepareStep). The host checks of check numerics are recorded as calls
// of their own (RecordCheck).
class RecordingBackend final : public backend::Backend, public backend::CheckRecorder {
 public:
  explicit RecordingBackend(backend::Backend& inner) : inner_(inner) {}

  std::vector<RecordedCall>& calls() { return calls_; }
  std::vector<RecordedSlot>& slots() { return slots_; }
  backend::Backend& inner() { return inner_; }
  // Where `t` lives: a slot (with its offset) when this recorder allocated its block and the
  // block is alive, else external.
  Argument ArgumentOf(const Tensor& t);

  Device device() const override { return inner_.device(); }
  absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) override;
  absl::Status Copy(const Tensor& src, Tensor& dst) override;
  absl::Status Fill(Tensor& t, float value) override;
  absl::Status Axpby(float alpha, const Tensor& x, float beta, Tensor& y) override;
  absl::Status Synchronize() override;
  // A value the trace computed (one of its slots) read on the host: refused. On the CPU such a
  // read reaches no backend call (the tensor is already on the host): ToHost asks here.
  absl::Status CheckHostRead(const Tensor& t) override;
  absl::StatusOr<Tensor> AllocateStaging(DType dtype, const Shape& shape) override;
  absl::StatusOr<std::shared_ptr<backend::Event>> CopyAsync(const Tensor& src,
                                                            Tensor& dst) override;
  absl::Status WaitEvent(backend::Event& event) override;
  absl::StatusOr<std::shared_ptr<backend::Event>> RecordEvent() override;
  absl::Status OrderQueueAfterThis(uintptr_t queue) override;
  absl::Status OrderThisAfterQueue(uintptr_t queue) override;
  absl::Status RecordCheck(const char* name, const Tensor& t, backend::TensorCheck check) override;
  void RecordAtEveryCall(std::function<void()> fn) override { at_every_call_.push_back(fn); }
  // What backend::AtEveryCall recorded, in order: run after each replay.
  std::vector<std::function<void()>>& at_every_call() { return at_every_call_; }

  bool ReadsBFloat16Operands() const override { return inner_.ReadsBFloat16Operands(); }
  absl::Status MatMul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                      Tensor& out) override;
  absl::Status MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                          Tensor& out) override;
  absl::Status Conv2DForward(const backend::ConvGeometry& geo, const Tensor& input,
                             const Tensor& filter, Tensor& output) override;
  absl::Status Conv2DBackwardData(const backend::ConvGeometry& geo, const Tensor& grad_output,
                                  const Tensor& filter, Tensor& grad_input) override;
  absl::Status Conv2DBackwardFilter(const backend::ConvGeometry& geo, const Tensor& input,
                                    const Tensor& grad_output, Tensor& grad_filter) override;
  absl::Status Conv2DBiasForward(const backend::ConvGeometry& geo, const Tensor& input,
                                 const Tensor& filter, const Tensor& bias, Tensor& output) override;
  absl::Status Conv2DBiasReluForward(const backend::ConvGeometry& geo, const Tensor& input,
                                     const Tensor& filter, const Tensor& bias,
                                     Tensor& output) override;
  absl::Status Conv2DBackwardFilterBias(const backend::ConvGeometry& geo, const Tensor& input,
                                        const Tensor& grad_output, Tensor& grad_filter,
                                        Tensor& grad_bias) override;
  absl::StatusOr<Tensor> Pool2DForward(const backend::PoolGeometry& geo, const Tensor& input,
                                       Tensor& output) override;
  absl::Status Pool2DBackward(const backend::PoolGeometry& geo, const Tensor& input,
                              const Tensor& output, const Tensor& workspace,
                              const Tensor& grad_output, Tensor& grad_input) override;
  absl::Status BatchNormForwardTraining(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                        float epsilon, Tensor& y, Tensor& mean,
                                        Tensor& variance) override;
  absl::Status BatchNormForwardInference(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& mean, const Tensor& variance, float epsilon,
                                         Tensor& y) override;
  absl::Status BatchNormBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                 const Tensor& variance, const Tensor& grad_y, float epsilon,
                                 bool statistics_are_constant, Tensor& grad_x, Tensor& grad_gamma,
                                 Tensor& grad_beta) override;
  bool FusesBatchNormRelu() const override { return inner_.FusesBatchNormRelu(); }
  int64_t BatchNormReluWorkspaceBytes(const Tensor& x) const override {
    return inner_.BatchNormReluWorkspaceBytes(x);
  }
  absl::Status BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float epsilon, Tensor& y,
                                            Tensor& mean, Tensor& variance,
                                            Tensor& workspace) override;
  absl::Status BatchNormReluBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& variance, const Tensor& workspace,
                                     const Tensor& grad_y, float epsilon, Tensor& grad_x,
                                     Tensor& grad_gamma, Tensor& grad_beta) override;
  absl::Status Binary(backend::BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) override;
  absl::Status BinaryBackward(backend::BinaryOp op, const Tensor& a, const Tensor& b,
                              const Tensor& grad_out, Tensor* grad_a, Tensor* grad_b) override;
  absl::Status AddRelu(const Tensor& a, const Tensor& b, Tensor& out) override;
  absl::Status AddReluBackward(const Tensor& out, const Tensor& grad_out, Tensor& grad_a,
                               Tensor& grad_b) override;
  absl::Status Unary(backend::UnaryOp op, const Tensor& x, Tensor& y) override;
  absl::Status UnaryBackward(backend::UnaryOp op, const Tensor& x, const Tensor& y,
                             const Tensor& grad_y, Tensor& grad_x) override;
  absl::Status Cast(const Tensor& x, Tensor& y) override;
  absl::Status Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                       Tensor& out) override;
  absl::Status Reduce(backend::ReduceOp op, const Tensor& x, const std::vector<bool>& reduced,
                      float scale, Tensor& out) override;
  absl::Status AccumulateSum(const Tensor& x, float scale, Tensor& total) override;
  absl::Status BroadcastTo(const Tensor& in, float scale, Tensor& out) override;
  absl::Status ReduceMaxBackward(const Tensor& x, const Tensor& max, const Tensor& grad_max,
                                 Tensor& grad_x) override;
  absl::Status ArgMax(const Tensor& x, Tensor& out) override;
  absl::Status Transpose(const Tensor& x, const std::vector<int>& perm, Tensor& out) override;
  absl::Status Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) override;
  absl::Status Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) override;
  absl::Status Softmax(const Tensor& logits, Tensor& y) override;
  absl::Status SoftmaxBackward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) override;
  absl::Status SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, Tensor& loss,
                                         Tensor& probs, float scale, Tensor* reduced) override;
  absl::Status SparseSoftmaxCrossEntropyBackward(const Tensor& probs, const Tensor& labels,
                                                 const Tensor& grad_loss, float scale,
                                                 Tensor& grad_logits) override;
  absl::Status CastLabels(const Tensor& labels, int64_t num_classes, Tensor& labels64,
                          Tensor& invalid) override;
  absl::Status InTopK(const Tensor& predictions, const Tensor& labels, int k, bool first_max_only,
                      Tensor& out) override;
  absl::Status OptimizerUpdate(const backend::UpdateRule& rule,
                               absl::Span<const backend::UpdateOperands> vars,
                               const Tensor& step) override;

 private:
  using Run = std::function<absl::Status(backend::Backend&, std::vector<Tensor>&)>;
  // Runs `run` on the real backend with `tensors` (the call's tensor arguments, in the order
  // `run` indexes them) and records the call.
  // `host_work`: RecordedCall::host_work.
  absl::Status Record(const char* name, std::vector<const Tensor*> tensors, Run run,
                      bool host_work = false);
  // Adds `call` with `tensors` as its arguments, noting each slot's use; returns its index.
  int Append(RecordedCall call, const std::vector<const Tensor*>& tensors);
  // Notes that call `call` uses slot `slot`.
  void Use(int slot, int call);
  absl::Status Refuse(absl::string_view what) const;

  backend::Backend& inner_;
  std::vector<RecordedCall> calls_;
  std::vector<RecordedSlot> slots_;
  std::unordered_map<const Buffer*, int> slot_of_;
  std::vector<std::function<void()>> at_every_call_;
};

}  // namespace sluice::train::function

#endif  // SLUICE_TRAIN_FUNCTION_RECORDING_BACKEND_H_
