// FormatCheckpointPath (train/callbacks/checkpoint_path.h): Keras' ModelCheckpoint file names,
// against what Python's str.format writes for the same pattern and values.
#include "train/callbacks/checkpoint_path.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::train::callbacks {
namespace {

std::string Format(const std::string& pattern, int64_t epoch, const Logs& logs = {}) {
  absl::StatusOr<std::string> path = FormatCheckpointPath(pattern, epoch, logs);
  EXPECT_TRUE(path.ok()) << path.status();
  return path.ok() ? *path : "";
}

TEST(CheckpointPathTest, EpochAndLogValuesAsPythonFormatsThem) {
  const Logs logs = {{"val_loss", 0.31249}, {"accuracy", 0.25}, {"loss", 12.5}};
  // "ckpt-{epoch:02d}-{val_loss:.3f}".format(epoch=7, val_loss=0.31249) == "ckpt-07-0.312"
  EXPECT_EQ(Format("ckpt-{epoch:02d}-{val_loss:.3f}", 7, logs), "ckpt-07-0.312");
  EXPECT_EQ(Format("run/{epoch}.ckpt", 12), "run/12.ckpt");
  EXPECT_EQ(Format("{accuracy}", 1, logs), "0.25");  // Python's str(0.25)
  EXPECT_EQ(Format("{loss:5.1f}|{loss:e}", 1, logs), " 12.5|1.250000e+01");
  EXPECT_EQ(Format("{loss:d}-{epoch:3d}", 4, logs), "13-  4");  // d rounds a value
  EXPECT_EQ(Format("{{epoch}}-{epoch}", 3), "{epoch}-3");
  EXPECT_EQ(Format("plain.ckpt", 3), "plain.ckpt");
}

// Saving after a step (save_freq), Keras formats {batch} too: the 1-based step within the epoch.
// At an epoch's end there is none, and naming it is the unknown-name error.
TEST(CheckpointPathTest, BatchIsKnownWhenSavingAfterAStep) {
  absl::StatusOr<std::string> path =
      FormatCheckpointPath("ckpt/{epoch:02d}-{batch:04d}", 3, {}, 17);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_EQ(*path, "ckpt/03-0017");
  absl::StatusOr<std::string> at_epoch_end = FormatCheckpointPath("ckpt/{batch}", 3, {});
  EXPECT_EQ(at_epoch_end.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CheckpointPathTest, AnUnknownNameIsAnErrorListingTheKnownOnes) {
  absl::StatusOr<std::string> path =
      FormatCheckpointPath("ckpt-{val_acc:.2f}", 1, {{"val_accuracy", 0.5}});
  EXPECT_EQ(path.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(path.status().message().find(
                "names {val_acc}, which the logs lack; known: epoch, val_accuracy"),
            std::string::npos)
      << path.status();
}

TEST(CheckpointPathTest, ABadFormatOrAnUnclosedBraceIsAnError) {
  for (const char* pattern : {"{epoch:>5}", "{epoch:02x}", "{epoch:.d}", "ckpt-{epoch"}) {
    SCOPED_TRACE(pattern);
    EXPECT_EQ(FormatCheckpointPath(pattern, 1, {}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace sluice::train::callbacks
