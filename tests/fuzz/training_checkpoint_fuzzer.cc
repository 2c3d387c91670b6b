// libFuzzer target: Trainer::LoadCheckpoint, then a short Fit that resumes from what it loaded
// (the input position, the held-back element, the metric sums, the optimizer slots). With the
// first byte's low bit set the rest is wrapped in a valid header (magic, length, CRC), so the
// fuzzer reaches the TrainingCheckpointProto and what is built from it.
//
// With SLUICE_FUZZ_SEEDS=DIR set, the target first writes genuine checkpoints into DIR (the seed
// corpus): a full one taken mid-epoch, one at an epoch's end, and a weights-only one.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/train/fit_test_util.h"
#include "train/callbacks/model_checkpoint.h"
#include "train/fit/trainer.h"
#include "train/optimizers/adam.h"

namespace sluice::train {
namespace {

Dataset Data() { return testing::BlobsDataset(24, 7, 8).Repeat(); }

void WriteSeeds(const std::string& dir) {
  auto model = testing::TinyModel(3);
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.01f});
  fit::Trainer trainer(*model, adam);
  callbacks::ModelCheckpoint mid({.path = dir + "/mid-{epoch}", .save_freq = 2});
  fuzz::CheckOk(
      trainer.Fit(Data(), {.epochs = 1, .steps_per_epoch = 3, .callbacks = {&mid}, .verbose = 0})
          .status());
  fuzz::CheckOk(trainer.SaveCheckpoint(dir + "/end"));
  fuzz::CheckOk(trainer.SaveWeights(dir + "/weights"));
  // The corpus holds the payloads with the mode byte in front (framed: the target adds the
  // header back), and one file as it is.
  fuzz::WriteFileOrDie(dir + "/raw-end", std::string(1, '\0') + fuzz::ReadFileOrDie(dir + "/end"));
  for (const char* name : {"mid-1", "end", "weights"}) {
    const std::string file = fuzz::ReadFileOrDie(absl::StrCat(dir, "/", name));
    fuzz::WriteFileOrDie(absl::StrCat(dir, "/framed-", name),
                         "\x01" + fuzz::CheckpointPayload(file));
    std::remove(absl::StrCat(dir, "/", name).c_str());
  }
}

}  // namespace
}  // namespace sluice::train

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Parse failures are expected by the thousand; protobuf would log each one.
  google::protobuf::SetLogHandler(nullptr);
  if (const char* dir = std::getenv("SLUICE_FUZZ_SEEDS")) sluice::train::WriteSeeds(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sluice;
  using namespace sluice::train;
  if (size < 1) return 0;
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string file = data[0] & 1 ? fuzz::FrameCheckpoint(rest) : std::string(rest);
  static const std::string* path = new std::string(fuzz::ScratchPath("fuzz.ckpt"));
  fuzz::WriteFileOrDie(*path, file);

  auto model = testing::TinyModel(3);
  optimizers::Adam adam(optimizers::AdamOptions{.learning_rate = 0.01f});
  fit::Trainer trainer(*model, adam);
  if (!trainer.LoadCheckpoint(*path).ok()) return 0;
  // Resume: at most two more steps, whatever epoch and step the file claims.
  (void)trainer.Fit(Data(), {.epochs = std::min<int64_t>(trainer.epoch(), 1 << 20) + 1,
                             .steps_per_epoch = 2,
                             .verbose = 0});
  return 0;
}
