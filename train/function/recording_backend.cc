#include "train/function/recording_backend.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "train/backend/compute_precision.h"
#include "train/backend/trace_hooks.h"

namespace sluice::train::function {

using backend::Backend;
using Tensors = std::vector<Tensor>;

absl::Status RecordingBackend::Refuse(absl::string_view what) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot trace this step: it ", what,
      ", which a replay would not repeat; run it eagerly (TrainerOptions::run_eagerly, "
      "sluice train --eager)"));
}

absl::StatusOr<Tensor> RecordingBackend::Allocate(DType dtype, const Shape& shape) {
  SLUICE_ASSIGN_OR_RETURN(Tensor t, inner_.Allocate(dtype, shape));
  if (t.buffer()) {
    // A freed block's Buffer object may share an address with this one: the newest wins.
    slot_of_[t.buffer().get()] = static_cast<int>(slots_.size());
    slots_.push_back(RecordedSlot{.bytes = t.buffer()->size(), .buffer = t.buffer()});
  }
  return t;
}

Argument RecordingBackend::ArgumentOf(const Tensor& t) {
  if (t.buffer()) {
    auto it = slot_of_.find(t.buffer().get());
    if (it != slot_of_.end() && slots_[it->second].buffer.lock() == t.buffer()) {
      return Argument{
          .slot = it->second, .offset = t.byte_offset(), .dtype = t.dtype(), .shape = t.shape()};
    }
  }
  return Argument{.dtype = t.dtype(), .shape = t.shape(), .external = t};
}

void RecordingBackend::Use(int slot, int call) {
  RecordedSlot& s = slots_[slot];
  if (s.first < 0) s.first = call;
  s.last = std::max(s.last, call);
}

int RecordingBackend::Append(RecordedCall call, const std::vector<const Tensor*>& tensors) {
  // A kernel may read the precision policy itself (CUDA's matmul compute type and convolution
  // data type; the CPU's matmul on float32 operands): a replay runs it under the policy it was
  // traced under, which the caller of a replay need not have set (Fit sets it around the
  // forward pass only).
  auto under_traced_precision = [precision = backend::CurrentPrecision()](auto run) {
    return [precision, run = std::move(run)](Backend& b, Tensors& t) {
      backend::ScopedPrecision scope(precision);
      return run(b, t);
    };
  };
  if (call.run) call.run = under_traced_precision(std::move(call.run));
  if (call.run_producing)
    call.run_producing = under_traced_precision(std::move(call.run_producing));
  const int index = static_cast<int>(calls_.size());
  for (const Tensor* t : tensors) {
    call.args.push_back(ArgumentOf(*t));
    if (call.args.back().slot >= 0) Use(call.args.back().slot, index);
  }
  calls_.push_back(std::move(call));
  return index;
}

absl::Status RecordingBackend::Record(const char* name, std::vector<const Tensor*> tensors, Run run,
                                      bool host_work) {
  Tensors now;
  now.reserve(tensors.size());
  for (const Tensor* t : tensors) now.push_back(*t);
  SLUICE_RETURN_IF_ERROR(run(inner_, now));
  Append(RecordedCall{.name = name, .run = std::move(run), .host_work = host_work}, tensors);
  return absl::OkStatus();
}

absl::Status RecordingBackend::CheckHostRead(const Tensor& t) {
  // A live slot's only: a freed intermediate's Buffer leaves its address to later allocations (a
  // constant the step makes, which it may read).
  if (ArgumentOf(t).slot >= 0) {
    return Refuse("reads a value it computes on the host (ToHost, ReadScalar)");
  }
  return absl::OkStatus();
}

absl::Status RecordingBackend::Copy(const Tensor& src, Tensor& dst) {
  if (dst.device().is_cpu() && !src.device().is_cpu()) {
    return Refuse("copies a device tensor to the host (a host read)");
  }
  // A copy from the host (a constant) waits for it on a GPU: host work.
  return Record(
      "Copy", {&src, &dst}, [](Backend& b, Tensors& t) { return b.Copy(t[0], t[1]); },
      /*host_work=*/src.device().is_cpu() || dst.device().is_cpu());
}

absl::Status RecordingBackend::Fill(Tensor& t, float value) {
  return Record("Fill", {&t}, [value](Backend& b, Tensors& a) { return b.Fill(a[0], value); });
}

absl::Status RecordingBackend::Axpby(float alpha, const Tensor& x, float beta, Tensor& y) {
  return Record("Axpby", {&x, &y},
                [=](Backend& b, Tensors& t) { return b.Axpby(alpha, t[0], beta, t[1]); });
}

absl::Status RecordingBackend::Synchronize() {
  return Refuse(
      "waits for the device (Synchronize) to read a result on the host, which a replay "
      "would not repeat");
}

absl::StatusOr<Tensor> RecordingBackend::AllocateStaging(DType, const Shape&) {
  return Refuse("allocates staging memory (the input pipeline's copies belong outside the step)");
}

absl::StatusOr<std::shared_ptr<backend::Event>> RecordingBackend::CopyAsync(const Tensor&,
                                                                            Tensor&) {
  return Refuse("starts an asynchronous copy (the input pipeline's, outside the step)");
}

absl::Status RecordingBackend::WaitEvent(backend::Event&) {
  return Refuse("waits for an event of the input pipeline's copies");
}

absl::StatusOr<std::shared_ptr<backend::Event>> RecordingBackend::RecordEvent() {
  return Refuse("records an event for the host to wait on (the training loop's, outside the step)");
}

absl::Status RecordingBackend::OrderQueueAfterThis(uintptr_t) {
  return Refuse("orders another library's queue after the step's kernels (DLPack's exchange)");
}

absl::Status RecordingBackend::OrderThisAfterQueue(uintptr_t) {
  return Refuse("orders the step's kernels after another library's queue (DLPack's exchange)");
}

absl::Status RecordingBackend::RecordCheck(const char* name, const Tensor& t,
                                           backend::TensorCheck check) {
  {
    // The check's own kernels and host reads are not the step's.
    backend::ScopedTracingBackend off(nullptr);
    SLUICE_RETURN_IF_ERROR(check(t));
  }
  Append(
      RecordedCall{.name = name,
                   .run = [check = std::move(check)](Backend&, Tensors& a) { return check(a[0]); },
                   .check = true,
                   .host_work = true},
      {&t});
  return absl::OkStatus();
}

absl::Status RecordingBackend::MatMul(const Tensor& a, bool transpose_a, const Tensor& b,
                                      bool transpose_b, Tensor& out) {
  return Record("MatMul", {&a, &b, &out}, [=](Backend& k, Tensors& t) {
    return k.MatMul(t[0], transpose_a, t[1], transpose_b, t[2]);
  });
}

absl::Status RecordingBackend::MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias,
                                          bool relu, Tensor& out) {
  return Record("MatMulBias", {&a, &b, &bias, &out},
                [=](Backend& k, Tensors& t) { return k.MatMulBias(t[0], t[1], t[2], relu, t[3]); });
}

absl::Status RecordingBackend::Conv2DForward(const backend::ConvGeometry& geo, const Tensor& input,
                                             const Tensor& filter, Tensor& output) {
  return Record("Conv2DForward", {&input, &filter, &output},
                [geo](Backend& b, Tensors& t) { return b.Conv2DForward(geo, t[0], t[1], t[2]); });
}

absl::Status RecordingBackend::Conv2DBackwardData(const backend::ConvGeometry& geo,
                                                  const Tensor& grad_output, const Tensor& filter,
                                                  Tensor& grad_input) {
  return Record(
      "Conv2DBackwardData", {&grad_output, &filter, &grad_input},
      [geo](Backend& b, Tensors& t) { return b.Conv2DBackwardData(geo, t[0], t[1], t[2]); });
}

absl::Status RecordingBackend::Conv2DBackwardFilter(const backend::ConvGeometry& geo,
                                                    const Tensor& input, const Tensor& grad_output,
                                                    Tensor& grad_filter) {
  return Record(
      "Conv2DBackwardFilter", {&input, &grad_output, &grad_filter},
      [geo](Backend& b, Tensors& t) { return b.Conv2DBackwardFilter(geo, t[0], t[1], t[2]); });
}

absl::Status RecordingBackend::Conv2DBiasForward(const backend::ConvGeometry& geo,
                                                 const Tensor& input, const Tensor& filter,
                                                 const Tensor& bias, Tensor& output) {
  return Record(
      "Conv2DBiasForward", {&input, &filter, &bias, &output},
      [geo](Backend& b, Tensors& t) { return b.Conv2DBiasForward(geo, t[0], t[1], t[2], t[3]); });
}

absl::Status RecordingBackend::Conv2DBiasReluForward(const backend::ConvGeometry& geo,
                                                     const Tensor& input, const Tensor& filter,
                                                     const Tensor& bias, Tensor& output) {
  return Record("Conv2DBiasReluForward", {&input, &filter, &bias, &output},
                [geo](Backend& b, Tensors& t) {
                  return b.Conv2DBiasReluForward(geo, t[0], t[1], t[2], t[3]);
                });
}

absl::Status RecordingBackend::Conv2DBackwardFilterBias(const backend::ConvGeometry& geo,
                                                        const Tensor& input,
                                                        const Tensor& grad_output,
                                                        Tensor& grad_filter, Tensor& grad_bias) {
  return Record("Conv2DBackwardFilterBias", {&input, &grad_output, &grad_filter, &grad_bias},
                [geo](Backend& b, Tensors& t) {
                  return b.Conv2DBackwardFilterBias(geo, t[0], t[1], t[2], t[3]);
                });
}

absl::StatusOr<Tensor> RecordingBackend::Pool2DForward(const backend::PoolGeometry& geo,
                                                       const Tensor& input, Tensor& output) {
  Tensors now = {input, output};
  SLUICE_ASSIGN_OR_RETURN(Tensor workspace, inner_.Pool2DForward(geo, now[0], now[1]));
  const int index = Append(
      RecordedCall{.name = "Pool2DForward",
                   .run_producing = [geo](Backend& b,
                                          Tensors& t) { return b.Pool2DForward(geo, t[0], t[1]); }},
      {&input, &output});
  if (workspace.buffer()) {
    const int slot = static_cast<int>(slots_.size());
    slot_of_[workspace.buffer().get()] = slot;
    slots_.push_back(RecordedSlot{
        .bytes = workspace.buffer()->size(), .buffer = workspace.buffer(), .produced = true});
    calls_[index].produces = slot;
    Use(slot, index);
  }
  return workspace;
}

absl::Status RecordingBackend::Pool2DBackward(const backend::PoolGeometry& geo, const Tensor& input,
                                              const Tensor& output, const Tensor& workspace,
                                              const Tensor& grad_output, Tensor& grad_input) {
  return Record("Pool2DBackward", {&input, &output, &workspace, &grad_output, &grad_input},
                [geo](Backend& b, Tensors& t) {
                  return b.Pool2DBackward(geo, t[0], t[1], t[2], t[3], t[4]);
                });
}

absl::Status RecordingBackend::BatchNormForwardTraining(const Tensor& x, const Tensor& gamma,
                                                        const Tensor& beta, float epsilon,
                                                        Tensor& y, Tensor& mean, Tensor& variance) {
  return Record("BatchNormForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance},
                [epsilon](Backend& b, Tensors& t) {
                  return b.BatchNormForwardTraining(t[0], t[1], t[2], epsilon, t[3], t[4], t[5]);
                });
}

absl::Status RecordingBackend::BatchNormForwardInference(const Tensor& x, const Tensor& gamma,
                                                         const Tensor& beta, const Tensor& mean,
                                                         const Tensor& variance, float epsilon,
                                                         Tensor& y) {
  return Record("BatchNormForwardInference", {&x, &gamma, &beta, &mean, &variance, &y},
                [epsilon](Backend& b, Tensors& t) {
                  return b.BatchNormForwardInference(t[0], t[1], t[2], t[3], t[4], epsilon, t[5]);
                });
}

absl::Status RecordingBackend::BatchNormBackward(const Tensor& x, const Tensor& gamma,
                                                 const Tensor& mean, const Tensor& variance,
                                                 const Tensor& grad_y, float epsilon,
                                                 bool statistics_are_constant, Tensor& grad_x,
                                                 Tensor& grad_gamma, Tensor& grad_beta) {
  return Record("BatchNormBackward",
                {&x, &gamma, &mean, &variance, &grad_y, &grad_x, &grad_gamma, &grad_beta},
                [=](Backend& b, Tensors& t) {
                  return b.BatchNormBackward(t[0], t[1], t[2], t[3], t[4], epsilon,
                                             statistics_are_constant, t[5], t[6], t[7]);
                });
}

absl::Status RecordingBackend::BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                                            const Tensor& beta, float epsilon,
                                                            Tensor& y, Tensor& mean,
                                                            Tensor& variance, Tensor& workspace) {
  return Record(
      "BatchNormReluForwardTraining", {&x, &gamma, &beta, &y, &mean, &variance, &workspace},
      [epsilon](Backend& b, Tensors& t) {
        return b.BatchNormReluForwardTraining(t[0], t[1], t[2], epsilon, t[3], t[4], t[5], t[6]);
      });
}

absl::Status RecordingBackend::BatchNormReluBackward(const Tensor& x, const Tensor& gamma,
                                                     const Tensor& mean, const Tensor& variance,
                                                     const Tensor& workspace, const Tensor& grad_y,
                                                     float epsilon, Tensor& grad_x,
                                                     Tensor& grad_gamma, Tensor& grad_beta) {
  return Record(
      "BatchNormReluBackward",
      {&x, &gamma, &mean, &variance, &workspace, &grad_y, &grad_x, &grad_gamma, &grad_beta},
      [epsilon](Backend& b, Tensors& t) {
        return b.BatchNormReluBackward(t[0], t[1], t[2], t[3], t[4], t[5], epsilon, t[6], t[7],
                                       t[8]);
      });
}

absl::Status RecordingBackend::AddRelu(const Tensor& a, const Tensor& b, Tensor& out) {
  return Record("AddRelu", {&a, &b, &out},
                [](Backend& k, Tensors& t) { return k.AddRelu(t[0], t[1], t[2]); });
}

absl::Status RecordingBackend::AddReluBackward(const Tensor& out, const Tensor& grad_out,
                                               Tensor& grad_a, Tensor& grad_b) {
  return Record("AddReluBackward", {&out, &grad_out, &grad_a, &grad_b},
                [](Backend& k, Tensors& t) { return k.AddReluBackward(t[0], t[1], t[2], t[3]); });
}

absl::Status RecordingBackend::Binary(backend::BinaryOp op, const Tensor& a, const Tensor& b,
                                      Tensor& out) {
  return Record("Binary", {&a, &b, &out},
                [op](Backend& k, Tensors& t) { return k.Binary(op, t[0], t[1], t[2]); });
}

absl::Status RecordingBackend::BinaryBackward(backend::BinaryOp op, const Tensor& a,
                                              const Tensor& b, const Tensor& grad_out,
                                              Tensor* grad_a, Tensor* grad_b) {
  // Absent gradients stay absent at replay: the flags say which of t[3], t[4] are real.
  const Tensor none;
  const bool has_a = grad_a != nullptr, has_b = grad_b != nullptr;
  return Record("BinaryBackward",
                {&a, &b, &grad_out, has_a ? grad_a : &none, has_b ? grad_b : &none},
                [=](Backend& k, Tensors& t) {
                  return k.BinaryBackward(op, t[0], t[1], t[2], has_a ? &t[3] : nullptr,
                                          has_b ? &t[4] : nullptr);
                });
}

absl::Status RecordingBackend::Unary(backend::UnaryOp op, const Tensor& x, Tensor& y) {
  return Record("Unary", {&x, &y},
                [op](Backend& b, Tensors& t) { return b.Unary(op, t[0], t[1]); });
}

absl::Status RecordingBackend::UnaryBackward(backend::UnaryOp op, const Tensor& x, const Tensor& y,
                                             const Tensor& grad_y, Tensor& grad_x) {
  return Record("UnaryBackward", {&x, &y, &grad_y, &grad_x}, [op](Backend& b, Tensors& t) {
    return b.UnaryBackward(op, t[0], t[1], t[2], t[3]);
  });
}

absl::Status RecordingBackend::Cast(const Tensor& x, Tensor& y) {
  return Record("Cast", {&x, &y}, [](Backend& b, Tensors& t) { return b.Cast(t[0], t[1]); });
}

absl::Status RecordingBackend::Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                                       Tensor& out) {
  backend::SeedSource source = backend::internal::TakeNextDropoutSeedSource();
  if (!source) {
    return Refuse(
        "runs a Dropout kernel whose seed has no source for replays "
        "(backend::SetNextDropoutSeedSource), so every replay would draw one mask");
  }
  // This call uses the seed the eager code drew; each replay draws the next from the source.
  SLUICE_RETURN_IF_ERROR(inner_.Dropout(x, rate, seed, mask, out));
  Append(RecordedCall{.name = "Dropout",
                      .run = [rate, source = std::move(source)](Backend& b,
                                                                Tensors& t) -> absl::Status {
                        SLUICE_ASSIGN_OR_RETURN(const uint64_t next, source());
                        return b.Dropout(t[0], rate, next, t[1], t[2]);
                      },
                      .host_work = true},
         {&x, &mask, &out});
  return absl::OkStatus();
}

absl::Status RecordingBackend::Reduce(backend::ReduceOp op, const Tensor& x,
                                      const std::vector<bool>& reduced, float scale, Tensor& out) {
  return Record("Reduce", {&x, &out}, [op, reduced, scale](Backend& b, Tensors& t) {
    return b.Reduce(op, t[0], reduced, scale, t[1]);
  });
}

absl::Status RecordingBackend::AccumulateSum(const Tensor& x, float scale, Tensor& total) {
  return Record("AccumulateSum", {&x, &total},
                [scale](Backend& b, Tensors& t) { return b.AccumulateSum(t[0], scale, t[1]); });
}

absl::Status RecordingBackend::BroadcastTo(const Tensor& in, float scale, Tensor& out) {
  return Record("BroadcastTo", {&in, &out},
                [scale](Backend& b, Tensors& t) { return b.BroadcastTo(t[0], scale, t[1]); });
}

absl::Status RecordingBackend::ReduceMaxBackward(const Tensor& x, const Tensor& max,
                                                 const Tensor& grad_max, Tensor& grad_x) {
  return Record("ReduceMaxBackward", {&x, &max, &grad_max, &grad_x},
                [](Backend& b, Tensors& t) { return b.ReduceMaxBackward(t[0], t[1], t[2], t[3]); });
}

absl::Status RecordingBackend::ArgMax(const Tensor& x, Tensor& out) {
  return Record("ArgMax", {&x, &out}, [](Backend& b, Tensors& t) { return b.ArgMax(t[0], t[1]); });
}

absl::Status RecordingBackend::Transpose(const Tensor& x, const std::vector<int>& perm,
                                         Tensor& out) {
  return Record("Transpose", {&x, &out},
                [perm](Backend& b, Tensors& t) { return b.Transpose(t[0], perm, t[1]); });
}

absl::Status RecordingBackend::Concat(const std::vector<Tensor>& inputs, int axis, Tensor& out) {
  std::vector<const Tensor*> tensors;
  for (const Tensor& in : inputs) tensors.push_back(&in);
  tensors.push_back(&out);
  const size_t n = inputs.size();
  return Record("Concat", std::move(tensors), [n, axis](Backend& b, Tensors& t) {
    const Tensors ins(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(n));
    return b.Concat(ins, axis, t[n]);
  });
}

absl::Status RecordingBackend::Split(const Tensor& x, int axis, std::vector<Tensor>& outputs) {
  std::vector<const Tensor*> tensors = {&x};
  for (const Tensor& out : outputs) tensors.push_back(&out);
  return Record("Split", std::move(tensors), [axis](Backend& b, Tensors& t) {
    // The outputs share their buffers with t's entries, so the kernel writes where t points.
    Tensors outs(t.begin() + 1, t.end());
    return b.Split(t[0], axis, outs);
  });
}

absl::Status RecordingBackend::Softmax(const Tensor& logits, Tensor& y) {
  return Record("Softmax", {&logits, &y},
                [](Backend& b, Tensors& t) { return b.Softmax(t[0], t[1]); });
}

absl::Status RecordingBackend::SoftmaxBackward(const Tensor& y, const Tensor& grad_y,
                                               Tensor& grad_x) {
  return Record("SoftmaxBackward", {&y, &grad_y, &grad_x},
                [](Backend& b, Tensors& t) { return b.SoftmaxBackward(t[0], t[1], t[2]); });
}

absl::Status RecordingBackend::SparseSoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                                         Tensor& loss, Tensor& probs, float scale,
                                                         Tensor* reduced) {
  std::vector<const Tensor*> tensors = {&logits, &labels, &loss, &probs};
  if (reduced != nullptr) tensors.push_back(reduced);  // the fifth, when there is one
  return Record("SparseSoftmaxCrossEntropy", std::move(tensors), [scale](Backend& b, Tensors& t) {
    return b.SparseSoftmaxCrossEntropy(t[0], t[1], t[2], t[3], scale,
                                       t.size() > 4 ? &t[4] : nullptr);
  });
}

absl::Status RecordingBackend::SparseSoftmaxCrossEntropyBackward(const Tensor& probs,
                                                                 const Tensor& labels,
                                                                 const Tensor& grad_loss,
                                                                 float scale, Tensor& grad_logits) {
  return Record("SparseSoftmaxCrossEntropyBackward", {&probs, &labels, &grad_loss, &grad_logits},
                [scale](Backend& b, Tensors& t) {
                  return b.SparseSoftmaxCrossEntropyBackward(t[0], t[1], t[2], scale, t[3]);
                });
}

absl::Status RecordingBackend::CastLabels(const Tensor& labels, int64_t num_classes,
                                          Tensor& labels64, Tensor& invalid) {
  return Record("CastLabels", {&labels, &labels64, &invalid},
                [num_classes](Backend& b, Tensors& t) {
                  return b.CastLabels(t[0], num_classes, t[1], t[2]);
                });
}

absl::Status RecordingBackend::InTopK(const Tensor& predictions, const Tensor& labels, int k,
                                      bool first_max_only, Tensor& out) {
  return Record("InTopK", {&predictions, &labels, &out}, [=](Backend& b, Tensors& t) {
    return b.InTopK(t[0], t[1], k, first_max_only, t[2]);
  });
}

// The updates read their step's scalars from a device tensor (Optimizer::PrepareStep writes it
// before each step), so they replay like any other kernel. The call is recorded with every
// variable's w, g and used slots, then the step.
absl::Status RecordingBackend::OptimizerUpdate(const backend::UpdateRule& rule,
                                               absl::Span<const backend::UpdateOperands> vars,
                                               const Tensor& step) {
  SLUICE_RETURN_IF_ERROR(backend::CheckUpdate(rule, vars, step));
  std::array<bool, backend::kMaxUpdateSlots> used = {};
  for (int j = 0; j < backend::kMaxUpdateSlots; ++j) used[j] = backend::UpdateUsesSlot(rule, j);
  std::vector<const Tensor*> tensors;
  for (const backend::UpdateOperands& var : vars) {
    tensors.push_back(var.w);
    tensors.push_back(var.g);
    for (int j = 0; j < backend::kMaxUpdateSlots; ++j) {
      if (used[j]) tensors.push_back(var.slots[j]);
    }
  }
  tensors.push_back(&step);
  const size_t count = vars.size();
  return Record(backend::UpdateName(rule.kind), std::move(tensors),
                [rule, used, count](Backend& k, Tensors& t) {
                  std::vector<backend::UpdateOperands> operands(count);
                  size_t next = 0;
                  for (backend::UpdateOperands& var : operands) {
                    var.w = &t[next++];
                    var.g = &t[next++];
                    for (int j = 0; j < backend::kMaxUpdateSlots; ++j) {
                      if (used[j]) var.slots[j] = &t[next++];
                    }
                  }
                  return k.OptimizerUpdate(rule, operands, t[next]);
                });
}

}  // namespace sluice::train::function
