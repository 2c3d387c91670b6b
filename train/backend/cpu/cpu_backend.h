#ifndef SLUICE_TRAIN_BACKEND_CPU_CPU_BACKEND_H_
#define SLUICE_TRAIN_BACKEND_CPU_CPU_BACKEND_H_

#include "train/backend/backend.h"

namespace sluice::train::backend::cpu {

// The CPU backend: oneDNN for matmul, convolution and pooling (primitives
// cached by shape in DnnlPrimitiveCache), and our own loops for batch norm and
// the rest, split across CpuThreads() with oneTBB and written so that the
// compiler vectorises their inner loops. Every kernel has finished when it
// returns. Thread-safe: kernels may run on several threads at once.
//
// The oneDNN kernels are in cpu_backend.cc, the elementwise, reduction, loss
// and optimizer kernels in cpu_elementwise_kernels.cc, the label and metric
// kernels in cpu_label_kernels.cc, float32 and bfloat16 batch norm in
// cpu_batch_norm_kernels.cc.
class CpuBackend final : public Backend {
 public:
  static CpuBackend& Get();

  Device device() const override { return Device::Cpu(); }

  absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) override;
  absl::Status Copy(const Tensor& src, Tensor& dst) override;
  absl::Status Fill(Tensor& t, float value) override;
  absl::Status Axpby(float alpha, const Tensor& x, float beta, Tensor& y) override;
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::Status ReleaseCachedMemory() override;

  // Under mixed_bfloat16 (oneDNN's bf16 kernels).
  bool ReadsBFloat16Operands() const override;
  absl::Status MatMulBias(const Tensor& a, const Tensor& b, const Tensor& bias, bool relu,
                          Tensor& out) override;
  absl::Status MatMul(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                      Tensor& out) override;
  absl::Status Conv2DForward(const ConvGeometry& geo, const Tensor& input, const Tensor& filter,
                             Tensor& output) override;
  absl::Status Conv2DBackwardData(const ConvGeometry& geo, const Tensor& grad_output,
                                  const Tensor& filter, Tensor& grad_input) override;
  absl::Status Conv2DBackwardFilter(const ConvGeometry& geo, const Tensor& input,
                                    const Tensor& grad_output, Tensor& grad_filter) override;
  absl::Status Conv2DBiasReluForward(const ConvGeometry& geo, const Tensor& input,
                                     const Tensor& filter, const Tensor& bias,
                                     Tensor& output) override;
  absl::Status Conv2DBiasForward(const ConvGeometry& geo, const Tensor& input, const Tensor& filter,
                                 const Tensor& bias, Tensor& output) override;
  absl::Status Conv2DBackwardFilterBias(const ConvGeometry& geo, const Tensor& input,
                                        const Tensor& grad_output, Tensor& grad_filter,
                                        Tensor& grad_bias) override;
  absl::StatusOr<Tensor> Pool2DForward(const PoolGeometry& geo, const Tensor& input,
                                       Tensor& output) override;
  absl::Status Pool2DBackward(const PoolGeometry& geo, const Tensor& input, const Tensor& output,
                              const Tensor& workspace, const Tensor& grad_output,
                              Tensor& grad_input) override;
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
  bool FusesBatchNormRelu() const override { return true; }
  int64_t BatchNormReluWorkspaceBytes(const Tensor& x) const override;
  absl::Status BatchNormReluForwardTraining(const Tensor& x, const Tensor& gamma,
                                            const Tensor& beta, float epsilon, Tensor& y,
                                            Tensor& mean, Tensor& variance,
                                            Tensor& workspace) override;
  absl::Status BatchNormReluBackward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                     const Tensor& variance, const Tensor& workspace,
                                     const Tensor& grad_y, float epsilon, Tensor& grad_x,
                                     Tensor& grad_gamma, Tensor& grad_beta) override;

  absl::Status Binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) override;
  absl::Status AddRelu(const Tensor& a, const Tensor& b, Tensor& out) override;
  absl::Status AddReluBackward(const Tensor& out, const Tensor& grad_out, Tensor& grad_a,
                               Tensor& grad_b) override;
  absl::Status BinaryBackward(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& grad_out,
                              Tensor* grad_a, Tensor* grad_b) override;
  absl::Status Unary(UnaryOp op, const Tensor& x, Tensor& y) override;
  absl::Status UnaryBackward(UnaryOp op, const Tensor& x, const Tensor& y, const Tensor& grad_y,
                             Tensor& grad_x) override;
  absl::Status Cast(const Tensor& x, Tensor& y) override;
  absl::Status Dropout(const Tensor& x, float rate, uint64_t seed, Tensor& mask,
                       Tensor& out) override;
  absl::Status Reduce(ReduceOp op, const Tensor& x, const std::vector<bool>& reduced, float scale,
                      Tensor& out) override;
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
  absl::Status OptimizerUpdate(const UpdateRule& rule, absl::Span<const UpdateOperands> vars,
                               const Tensor& step) override;

 private:
  CpuBackend() = default;
  // Cast between float32 and bfloat16 (oneDNN's reorder).
  absl::Status CastBFloat16(const Tensor& x, Tensor& y);
  // MatMul with an optional bias (null: none) and ReLU, fused by oneDNN.
  absl::Status MatMulWith(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b,
                          const Tensor* bias, bool relu, Tensor& out);
  // The convolutions with an optional bias (null: none) and ReLU (forward), fused by oneDNN.
  absl::Status ConvForward(const ConvGeometry& geo, const Tensor& input, const Tensor& filter,
                           const Tensor* bias, bool relu, Tensor& output);
  absl::Status ConvBackwardFilter(const ConvGeometry& geo, const Tensor& input,
                                  const Tensor& grad_output, Tensor& grad_filter,
                                  Tensor* grad_bias);
};

// How a float32 convolution runs forward. kDeconvolution: as oneDNN's deconvolution (its
// backward-data kernel) with the filter flipped in space, which computes the same sums, for 3x3
// filters at stride 1 with one pixel of padding on every side (SAME) and no bias; others run
// kDirect. On AVX2, where oneDNN 2.6's backward-data kernel measured 6-35% faster than its forward
// one on resnet-20's and resnet-small's 3x3 shapes (docs/benchmarks.md), kAuto picks
// kDeconvolution; on CPUs with AVX-512 (other kernels, not measured) kDirect.
// $SLUICE_CONV_FORWARD (auto, direct or deconvolution) sets it at the first convolution; the
// default is kAuto. Another value is an error of every convolution forward (InvalidArgument).
enum class ConvForwardAlgorithm { kAuto, kDirect, kDeconvolution };
// Overrides $SLUICE_CONV_FORWARD.
void SetConvForwardAlgorithm(ConvForwardAlgorithm algorithm);
// Drops what SetConvForwardAlgorithm set: $SLUICE_CONV_FORWARD is read again at the next
// convolution.
void ReadConvForwardAlgorithmFromEnvironment();
// The setting (kAuto, kDirect, kDeconvolution), or the environment's error.
absl::StatusOr<ConvForwardAlgorithm> GetConvForwardAlgorithm();
// What a float32 convolution of `geo` without a bias runs forward as now: kDirect or
// kDeconvolution.
absl::StatusOr<ConvForwardAlgorithm> ConvForwardAlgorithmFor(const ConvGeometry& geo);

}  // namespace sluice::train::backend::cpu

#endif  // SLUICE_TRAIN_BACKEND_CPU_CPU_BACKEND_H_
