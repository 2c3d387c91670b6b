#include "train/recipes/image_classifier.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx_runtime.h"
#include "tests/temp_dir.h"
#include "tests/train/recipes/recipe_test_util.h"
#include "train/fit/saved_model.h"
#include "train/import/onnx_import.h"

namespace sluice::train::recipes {
namespace {

using ::sluice::testing::ScopedTempDir;
using ::sluice::train::recipes::testing::WriteDarkAndLightTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ImageClassifierTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(WriteDarkAndLightTree(images_.path())); }

  // An MLP on the 32 training images of 8x8, 10 epochs of 4 steps, silent.
  ImageClassifierOptions Options() const {
    return {.image_dir = images_.path(),
            .image_size = 8,
            .batch_size = 8,
            .model = "mlp",
            .optimizer = {.learning_rate = 0.01},
            .epochs = 10,
            .verbose = 0};
  }

  ScopedTempDir images_;
};

TEST_F(ImageClassifierTest, LearnsDarkFromLightAndSavesTheModel) {
  ScopedTempDir out;
  ImageClassifierOptions options = Options();
  options.save_dir = out.File("model");
  absl::StatusOr<ImageClassifierResult> result = TrainImageClassifier(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->train_records, 32);
  EXPECT_EQ(result->ranks, 1);
  EXPECT_EQ(result->history.at("loss").size(), 10u);
  EXPECT_LT(result->history.at("loss").back(), result->history.at("loss").front());
  EXPECT_GE(callbacks::LogValue(result->test, "accuracy").value_or(0), 0.99);
  EXPECT_GT(result->images_per_second, 0);
  EXPECT_GT(result->train_seconds, 0);
  EXPECT_EQ(result->skipped_records, 0);

  absl::StatusOr<fit::LoadedModel> saved = fit::LoadModel(options.save_dir);
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->input_shape, (Shape{1, 8, 8, 3}));
  EXPECT_THAT(saved->class_names, ElementsAre("dark", "light"));
}

// Smoothing 0.5 over 2 classes puts a floor of 0.5 * log 2 under the loss, which the run without
// it goes below.
TEST_F(ImageClassifierTest, LabelSmoothingReachesTheLoss) {
  ImageClassifierOptions smoothed = Options();
  smoothed.label_smoothing = 0.5;
  absl::StatusOr<ImageClassifierResult> plain = TrainImageClassifier(Options());
  absl::StatusOr<ImageClassifierResult> with = TrainImageClassifier(smoothed);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_LT(callbacks::LogValue(plain->test, "loss").value_or(1), 0.5 * std::log(2.0));
  EXPECT_GE(callbacks::LogValue(with->test, "loss").value_or(0), 0.5 * std::log(2.0));
  EXPECT_GE(callbacks::LogValue(with->test, "accuracy").value_or(0), 0.99);
}

TEST_F(ImageClassifierTest, ResumingFromTheCheckpointEndsWhereOneRunEnds) {
  ScopedTempDir out;
  ImageClassifierOptions options = Options();
  options.epochs = 4;
  absl::StatusOr<ImageClassifierResult> straight = TrainImageClassifier(options);
  options.callbacks.checkpoint = out.File("run.ckpt");
  options.resume = true;
  options.epochs = 2;
  ASSERT_TRUE(TrainImageClassifier(options).ok());
  ASSERT_TRUE(std::filesystem::exists(options.callbacks.checkpoint));
  options.epochs = 4;
  absl::StatusOr<ImageClassifierResult> resumed = TrainImageClassifier(options);
  ASSERT_TRUE(straight.ok()) << straight.status();
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->history.at("loss").size(), 2u);  // epochs 3 and 4
  EXPECT_EQ(callbacks::LogValue(resumed->test, "loss"),
            callbacks::LogValue(straight->test, "loss"));
}

// The backups outlive Fit until the run's end is written: a run whose save fails (as one killed
// then would) keeps them, and the same run started again resumes at the end of training, trains
// nothing, and evaluates and saves the same model; only then are they deleted.
TEST_F(ImageClassifierTest, BackupsStayUntilTheSavedModelIsWritten) {
  ScopedTempDir out;
  ImageClassifierOptions options = Options();
  options.epochs = 3;
  absl::StatusOr<ImageClassifierResult> straight = TrainImageClassifier(options);
  ASSERT_TRUE(straight.ok()) << straight.status();
  options.callbacks.backup_dir = out.File("backups");
  // A save that fails at the end (a folder where model.pb goes), past the check before
  // training that the folder can be made.
  options.save_dir = out.File("blocked");
  std::filesystem::create_directories(options.save_dir + "/model.pb/in-the-way");
  ASSERT_FALSE(TrainImageClassifier(options).ok());
  ASSERT_FALSE(std::filesystem::is_empty(options.callbacks.backup_dir));

  options.save_dir = out.File("model");
  absl::StatusOr<ImageClassifierResult> resumed = TrainImageClassifier(options);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->history.history.empty()) << "trained again";
  EXPECT_EQ(callbacks::LogValue(resumed->test, "loss"),
            callbacks::LogValue(straight->test, "loss"));
  EXPECT_TRUE(std::filesystem::exists(options.save_dir));
  EXPECT_TRUE(std::filesystem::is_empty(options.callbacks.backup_dir));
}

// tests/onnx/make_models.py's small base (written by ONNX's own helper) at `path`.
void WriteSmallBase(const std::string& path) {
  std::string output;
  ASSERT_EQ(
      sluice::testing::Shell(absl::StrCat(sluice::testing::kPython, " '", sluice::testing::kOnnxDir,
                                          "/make_models.py' small_base '", path, "'"),
                             &output),
      0)
      << output;
}

// Keras' transfer-learning flow: the imported base frozen while the head learns (its weights and
// batch-norm statistics unchanged), then everything fine-tuned; the loss falls in both phases.
TEST_F(ImageClassifierTest, TransferLearningFromAnOnnxBaseFreezesThenFineTunes) {
  ScopedTempDir out;
  const std::string base = out.File("base.onnx");
  ASSERT_NO_FATAL_FAILURE(WriteSmallBase(base));
  ImageClassifierOptions options = Options();
  options.base_onnx = base;
  options.optimizer = {.name = "adam", .learning_rate = 0.01};
  options.epochs = 3;
  options.freeze_base_epochs = 3;
  options.save_dir = out.File("frozen");
  absl::StatusOr<ImageClassifierResult> frozen = TrainImageClassifier(options);
  ASSERT_TRUE(frozen.ok()) << frozen.status();
  const std::vector<double>& loss = frozen->history.at("loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_LT(loss.back(), loss.front());
  // The base's variables are the file's, unchanged; the head's are new.
  absl::StatusOr<fit::LoadedModel> saved = fit::LoadModel(options.save_dir);
  ASSERT_TRUE(saved.ok()) << saved.status();
  absl::StatusOr<std::unique_ptr<layers::Model>> file =
      importing::ImportOnnx(base, {.height = 8, .width = 8});
  ASSERT_TRUE(file.ok()) << file.status();
  int compared = 0;
  for (autodiff::Variable* v : (*file)->Variables()) {
    for (autodiff::Variable* w : saved->model->Variables()) {
      if (w->name() != v->name()) continue;
      EXPECT_TRUE(w->value().Equals(v->value())) << v->name();
      ++compared;
    }
  }
  EXPECT_EQ(compared, 8);  // two convolutions' kernels and biases, the batch norm's four
  // Then fine-tuning: the base learns too, and the loss goes on falling.
  options.epochs = 6;
  options.fine_tune_learning_rate = 1e-3;
  options.save_dir.clear();
  absl::StatusOr<ImageClassifierResult> tuned = TrainImageClassifier(options);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  const std::vector<double>& all = tuned->history.at("loss");
  ASSERT_EQ(all.size(), 6u);
  EXPECT_LT(all[5], all[3]);
  EXPECT_EQ(tuned->history.epochs.back(), 5);
}

// Wrong options fail before any data is read: the image folder here does not exist.
TEST(ImageClassifierOptionsTest, WrongOptionsFailBeforeReadingData) {
  const ImageClassifierOptions missing{.image_dir = "/nonexistent-sluice-images", .verbose = 0};
  ImageClassifierOptions options = missing;
  options.optimizer.name = "lamb";
  absl::StatusOr<ImageClassifierResult> result = TrainImageClassifier(options);
  EXPECT_THAT(result.status().message(), HasSubstr("optimizer takes sgd, adam, adamw, rmsprop"));
  options = missing;
  options.precision = backend::Precision::kMixedFloat16;
  result = TrainImageClassifier(options);
  EXPECT_THAT(result.status().message(), HasSubstr("precision mixed_float16: "));
  options = missing;
  options.device = Device::Cuda(63);
  result = TrainImageClassifier(options);
  EXPECT_THAT(result.status().message(), HasSubstr("device cuda:63: "));
  // And the data: exactly one source.
  result = TrainImageClassifier({.tfrecord_dir = "a", .image_dir = "b", .verbose = 0});
  EXPECT_TRUE(absl::IsInvalidArgument(result.status())) << result.status();
  options = missing;
  options.freeze_base_epochs = 1;
  result = TrainImageClassifier(options);
  EXPECT_THAT(result.status().message(), HasSubstr("freeze_base_epochs needs a base"));
  result = TrainImageClassifier(missing);
  EXPECT_THAT(result.status().message(), HasSubstr("/nonexistent-sluice-images"));
}

// A destination that cannot be a directory fails before the data is read (a --save over a file
// failed once the training it was to keep had run).
TEST(ImageClassifierOptionsTest, DestinationsThatCannotBeDirectoriesFailFirst) {
  ScopedTempDir dir;
  std::ofstream(dir.File("a-file")) << "x";
  ImageClassifierOptions options{.image_dir = "/nonexistent-sluice-images", .verbose = 0};
  options.save_dir = dir.File("a-file/model");
  absl::StatusOr<ImageClassifierResult> result = TrainImageClassifier(options);
  EXPECT_TRUE(absl::IsFailedPrecondition(result.status())) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr("save_dir " + dir.File("a-file/model") + ": " +
                                                   dir.File("a-file") + " is not a directory"));
  options.save_dir = dir.File("a-file");
  EXPECT_THAT(TrainImageClassifier(options).status().message(), HasSubstr("is not a directory"));
  options.save_dir = "";
  options.callbacks.checkpoint = dir.File("a-file/ck");
  EXPECT_THAT(TrainImageClassifier(options).status().message(),
              HasSubstr("checkpoint " + dir.File("a-file") + ": "));
  options.callbacks.checkpoint = dir.path();  // a folder, not a checkpoint's path
  EXPECT_THAT(TrainImageClassifier(options).status().message(),
              HasSubstr(": a directory; give a file's path"));
  // The other folders a run writes, the same way (they failed later, each with another code).
  options.callbacks.checkpoint = "";
  for (auto [field, name] : {std::pair{&options.callbacks.backup_dir, "backup_dir"},
                             std::pair{&options.callbacks.log_dir, "log_dir"},
                             std::pair{&options.profile_dir, "profile_dir"}}) {
    *field = dir.File("a-file/sub");
    result = TrainImageClassifier(options);
    EXPECT_TRUE(absl::IsFailedPrecondition(result.status())) << name << ": " << result.status();
    EXPECT_THAT(result.status().message(),
                HasSubstr(absl::StrCat(name, " ", dir.File("a-file/sub"), ": ", dir.File("a-file"),
                                       " is not a directory")));
    *field = "";
  }
  // Paths that can be made get as far as the data (and create nothing).
  options.callbacks.checkpoint = dir.File("new/deeper/ck");
  options.save_dir = dir.File("new/model");
  EXPECT_THAT(TrainImageClassifier(options).status().message(),
              HasSubstr("/nonexistent-sluice-images"));
  EXPECT_FALSE(std::filesystem::exists(dir.File("new")));
}

}  // namespace
}  // namespace sluice::train::recipes
