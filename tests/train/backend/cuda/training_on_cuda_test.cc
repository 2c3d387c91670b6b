// The training loop on a real GPU against the CPU: Fit (with PrefetchToDevice feeding it),
// Evaluate and Predict on cuda:0 give the CPU's numbers within float32 tolerance (the kernels
// differ: cuBLAS and our CUDA reductions sum in other orders). Skips without a device.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "tests/train/fit_test_util.h"
#include "train/autodiff/check_numerics.h"
#include "train/backend/cuda/cuda_backend.h"
#include "train/backend/transfer.h"
#include "train/fit/trainer.h"
#include "train/ops/batch_norm.h"
#include "train/optimizers/sgd.h"

namespace sluice::train::testing {
namespace {

struct Result {
  fit::History history;
  callbacks::Logs eval;
  Tensor predictions;
};

Result Train(const Device& device) {
  Result r;
  std::unique_ptr<layers::Sequential> model = TinyModel(7);
  EXPECT_TRUE(model->To(device).ok());
  optimizers::Sgd sgd({.learning_rate = 0.1f, .momentum = 0.9f});
  fit::Trainer trainer(*model, sgd, {.top_k = 2});
  Dataset train = Dataset::FromTensorSlices(Blobs(96, 3)).Shuffle(32, {.seed = 5}).Batch(16);
  absl::StatusOr<fit::History> h = trainer.Fit(train, {.epochs = 3, .seed = 11, .verbose = 0});
  EXPECT_TRUE(h.ok()) << h.status();
  if (h.ok()) r.history = *h;
  absl::StatusOr<callbacks::Logs> eval = trainer.Evaluate(BlobsDataset(48, 9, 16));
  EXPECT_TRUE(eval.ok()) << eval.status();
  if (eval.ok()) r.eval = *eval;
  absl::StatusOr<Tensor> p =
      trainer.Predict(Dataset::FromTensorSlices(Element{Blobs(20, 9)[0]}).Batch(8));
  EXPECT_TRUE(p.ok()) << p.status();
  if (p.ok()) r.predictions = *p;
  return r;
}

TEST(TrainingOnCudaTest, FitEvaluatePredictMatchTheCpu) {
  if (backend::cuda::CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA device: training on cuda:0 is compared with the CPU on a GPU";
  }
  const Result cpu = Train(Device::Cpu());
  const Result gpu = Train(Device::Cuda(0));
  for (const char* key : {"loss", "accuracy"}) {
    ASSERT_EQ(cpu.history.at(key).size(), gpu.history.at(key).size());
    for (size_t i = 0; i < cpu.history.at(key).size(); ++i) {
      EXPECT_NEAR(cpu.history.at(key)[i], gpu.history.at(key)[i], 1e-4) << key << " epoch " << i;
    }
  }
  for (const auto& [key, value] : cpu.eval) EXPECT_NEAR(value, gpu.eval.at(key), 1e-4) << key;
  ASSERT_TRUE(gpu.predictions.device().is_cpu());
  ASSERT_EQ(cpu.predictions.shape(), gpu.predictions.shape());
  for (int64_t i = 0; i < cpu.predictions.num_elements(); ++i) {
    EXPECT_NEAR(cpu.predictions.data<float>()[i], gpu.predictions.data<float>()[i], 1e-4) << i;
  }
}

// CUDA's fused batch norm + ReLU gives 0 where the normalised value is NaN (as its ReLU does); a
// NaN in x is still caught by check numerics, in the batch's statistics.
TEST(TrainingOnCudaTest, CheckNumericsSeesANaNThroughTheFusedBatchNormRelu) {
  if (backend::cuda::CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA device: the fused batch norm + ReLU runs on a GPU";
  }
  Tensor x = T({1, 2, 3, 4, 5, 6}, {3, 2});
  x.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  const Device gpu = Device::Cuda(0);
  const absl::StatusOr<Tensor> xd = backend::CopyTo(x, gpu),
                               gamma = backend::CopyTo(T({1, 1}, {2}), gpu),
                               beta = backend::CopyTo(T({0, 0}, {2}), gpu);
  ASSERT_TRUE(xd.ok() && gamma.ok() && beta.ok());
  autodiff::EnableCheckNumerics();
  const absl::Status s = ops::BatchNormReluTraining(*xd, *gamma, *beta, 1e-3f).status();
  autodiff::DisableCheckNumerics();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("BatchNormReluTraining produced NaN"), std::string::npos) << s;
}

}  // namespace
}  // namespace sluice::train::testing
