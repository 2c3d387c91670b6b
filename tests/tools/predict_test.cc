// Tests `sluice predict`'s batches, its errors and --skip-bad on a small model trained here: an
// MLP that tells dark JPEGs from light ones (tests/train/recipes/recipe_test_util.h).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/tfrecord_reader.h"
#include "tests/tools/cli_test_util.h"
#include "tests/train/recipes/recipe_test_util.h"
#include "train/fit/saved_model.h"

namespace sluice {
namespace {

using ::sluice::cli_test::CliResult;
using ::sluice::cli_test::JsonNumber;
using ::sluice::cli_test::RunSluice;
using ::sluice::cli_test::ShellQuote;
using ::sluice::cli_test::TempPath;
using ::sluice::cli_test::TestData;
using ::testing::HasSubstr;
using ::testing::Not;

class PredictCommandTest : public ::testing::Test {
 protected:
  // One model and one TFRecord of the 40 images for the suite: training takes a few seconds.
  static void SetUpTestSuite() {
    root_ = new std::string(TempPath("predict_tree"));
    ::sluice::train::recipes::testing::WriteDarkAndLightTree(*root_);
    model_ = new std::string(TempPath("predict_mlp"));
    CliResult r = RunSluice("train --images " + ShellQuote(*root_) +
                            " --model mlp --image-size 8 --epochs 10 --batch 8 --lr 0.01 --save " +
                            ShellQuote(*model_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    records_ = new std::string(TempPath("predict_records"));
    r = RunSluice("convert images " + ShellQuote(*root_) + " --out " + ShellQuote(*records_) +
                  " --shards 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete root_;
    delete model_;
    delete records_;
  }
  static std::string Shard() { return *records_ + "/train-00000-of-00001.tfrecord"; }

  static std::string* root_;
  static std::string* model_;
  static std::string* records_;
};
std::string* PredictCommandTest::root_ = nullptr;
std::string* PredictCommandTest::model_ = nullptr;
std::string* PredictCommandTest::records_ = nullptr;

// The top-1 class name of each line of predict's text output ("SOURCE: NAME 0.998").
std::vector<std::string> TopOneNames(const std::string& out) {
  std::vector<std::string> names;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t colon = line.rfind(": ");
    if (colon == std::string::npos) continue;
    const std::string rest = line.substr(colon + 2);
    names.push_back(rest.substr(0, rest.find(' ')));
  }
  return names;
}

// The batch a forward pass holds changes nothing but the speed: every record's top class is the
// same with 1, 7 (not a divisor of the 40 records) and the default 32, in input order, and each
// is the class its folder names.
TEST_F(PredictCommandTest, EveryBatchSizeGivesTheSamePredictionsInOrder) {
  std::vector<std::vector<std::string>> runs;
  for (const char* batch : {"1", "7", "32"}) {
    CliResult r = RunSluice(absl::StrCat("predict --top 1 --batch ", batch, " --model ",
                                         ShellQuote(*model_), " ", ShellQuote(Shard())));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr(Shard() + ":39: ")) << "batch " << batch;
    runs.push_back(TopOneNames(r.out));
  }
  ASSERT_EQ(runs[0].size(), 40u);
  EXPECT_EQ(runs[1], runs[0]);
  EXPECT_EQ(runs[2], runs[0]);
  // The records are in the converter's order; the labels say which folder each came from.
  CliResult labels = RunSluice("inspect --json --records all " + ShellQuote(Shard()));
  ASSERT_EQ(labels.exit_code, 0) << labels.err;
  std::istringstream records(labels.out);
  int index = 0, agree = 0;
  for (std::string record; std::getline(records, record) && index < 40; ++index) {
    const size_t label = record.find("\"values\": [", record.find("\"image/class/label\""));
    ASSERT_NE(label, std::string::npos) << record;
    agree += runs[0][index] == (record[label + 11] == '1' ? "light" : "dark");
  }
  EXPECT_EQ(index, 40);
  EXPECT_GE(agree, 38);
  EXPECT_EQ(
      RunSluice("predict --batch 0 --model " + ShellQuote(*model_) + " " + ShellQuote(Shard()))
          .exit_code,
      2);
  // A shard's name in capitals is still a shard (it was read as a JPEG: "not a JPEG").
  const std::string upper = TempPath("UPPER.TFRecord");
  std::filesystem::copy_file(Shard(), upper);
  CliResult capitals =
      RunSluice("predict --top 1 --model " + ShellQuote(*model_) + " " + ShellQuote(upper));
  ASSERT_EQ(capitals.exit_code, 0) << capitals.err;
  EXPECT_EQ(TopOneNames(capitals.out), runs[0]);
  std::filesystem::remove(upper);
}

// Raw records (`convert fashion-mnist --format raw`) of gray pixels meet an RGB model as a gray
// JPEG does: converted (they were refused, "784 bytes is not 28x28x3"), so the model's brightness
// rule holds; a raw record without its size says which fields it lacks.
TEST_F(PredictCommandTest, RawGrayRecordsAreConvertedForAnRgbModel) {
  const std::string raw = TempPath("raw_gray.tfrecord");
  ::sluice::train::recipes::testing::WriteRawImages(raw, 10, 8, 8);  // image i all (i * 25) % 256
  CliResult r = RunSluice("predict --top 1 --model " + ShellQuote(*model_) + " " + ShellQuote(raw));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> top = TopOneNames(r.out);
  ASSERT_EQ(top.size(), 10u) << r.out;
  EXPECT_EQ(top[0], "dark");   // all 0
  EXPECT_EQ(top[1], "dark");   // all 25
  EXPECT_EQ(top[8], "light");  // all 200
  EXPECT_EQ(top[9], "light");  // all 225

  const std::string sizeless = TempPath("raw_sizeless.tfrecord");
  ::sluice::train::recipes::testing::WriteRawImages(sizeless, 1, 0, 8);
  r = RunSluice("predict --model " + ShellQuote(*model_) + " " + ShellQuote(sizeless));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("a raw image (image/format raw) needs image/height and "
                               "image/width, and this record's are 0 x 8"));
  std::filesystem::remove(raw);
  std::filesystem::remove(sizeless);
}

// A record whose data is corrupt: without --skip-bad, the records before it are classified, the
// error names the file, the record and its offset, and nothing after it is read (the exit
// status is 1); with --skip-bad, every other record is classified and the bad one counted.
TEST_F(PredictCommandTest, ACorruptRecordFailsOrIsSkippedAndCounted) {
  const std::string corrupt = TempPath("corrupt.tfrecord");
  std::filesystem::copy_file(Shard(), corrupt);
  uint64_t offset = 0;
  {
    absl::StatusOr<std::unique_ptr<TFRecordReader>> reader = TFRecordReader::Open(Shard());
    ASSERT_TRUE(reader.ok()) << reader.status();
    std::string record;
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(*(*reader)->ReadRecord(&record));
    offset = (*reader)->offset();  // record 10's header
  }
  {
    std::fstream file(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(static_cast<std::streamoff>(offset + 12 + 40));  // inside record 10's data
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(static_cast<std::streamoff>(offset + 12 + 40));
    byte = static_cast<char>(byte ^ 0x20);
    file.write(&byte, 1);
  }
  CliResult failed =
      RunSluice("predict --json --batch 4 --model " + ShellQuote(*model_) + " " + corrupt);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(JsonNumber(failed.out, "images"), 10) << failed.out;
  EXPECT_EQ(JsonNumber(failed.out, "failed"), 1);
  EXPECT_EQ(JsonNumber(failed.out, "skipped"), 0);
  EXPECT_THAT(failed.out, HasSubstr("\"source\": \"" + corrupt + ":10\", \"error\": \""));
  EXPECT_THAT(failed.out, HasSubstr(absl::StrCat("record 10 at offset ", offset)));

  CliResult skipped = RunSluice("predict --json --skip-bad --batch 4 --model " +
                                ShellQuote(*model_) + " " + corrupt);
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_EQ(JsonNumber(skipped.out, "images"), 39) << skipped.out;
  EXPECT_EQ(JsonNumber(skipped.out, "skipped"), 1);
  EXPECT_EQ(JsonNumber(skipped.out, "failed"), 0);
  EXPECT_THAT(skipped.out, Not(HasSubstr(":10\"")));
  EXPECT_THAT(skipped.out, HasSubstr(":39\""));
  // Named on stderr, with what is wrong with it.
  EXPECT_THAT(skipped.err, HasSubstr(absl::StrCat("skipped ", corrupt, ": record 10 at offset ",
                                                  offset, ": data CRC mismatch")));
}

// The class names travel through ONNX (export writes them as metadata, import reads them back):
// the imported model names the same classes for the same images.
TEST_F(PredictCommandTest, ClassNamesSurviveExportAndImport) {
  const std::string onnx = TempPath("named.onnx"), imported = TempPath("named_imported");
  ASSERT_EQ(
      RunSluice("export --model " + ShellQuote(*model_) + " --out " + ShellQuote(onnx)).exit_code,
      0);
  CliResult r = RunSluice("import " + ShellQuote(onnx) + " --out " + ShellQuote(imported));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, Not(HasSubstr("warning")));
  const std::string args = " --top 1 --batch 8 " + Shard();
  CliResult original = RunSluice("predict --model " + ShellQuote(*model_) + args);
  CliResult again = RunSluice("predict --model " + ShellQuote(imported) + args);
  ASSERT_EQ(original.exit_code, 0) << original.err;
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::vector<std::string> names = TopOneNames(again.out);
  EXPECT_EQ(names, TopOneNames(original.out));
  ASSERT_FALSE(names.empty());
  EXPECT_TRUE(names.front() == "dark" || names.front() == "light") << names.front();
}

// A model saved without class names (from C++, as here, or by `sluice import` of an ONNX file
// without them): each class reads "class N" in text, never a bare index beside its probability,
// and its JSON "name" is null.
TEST_F(PredictCommandTest, AnUnnamedClassIsSaidToBeOne) {
  absl::StatusOr<train::fit::LoadedModel> loaded = train::fit::LoadModel(*model_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->class_names, (std::vector<std::string>{"dark", "light"}));
  const std::string unnamed = TempPath("unnamed_mlp");
  ASSERT_TRUE(train::fit::SaveModel(*loaded->model, loaded->input_shape, unnamed).ok());
  const std::string image = ShellQuote(*root_ + "/dark/1.jpg");
  CliResult text = RunSluice("predict --top 2 --model " + ShellQuote(unnamed) + " " + image);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out,
              ::testing::MatchesRegex(".*/dark/1.jpg: class 0 [0-9.]+ class 1 [0-9.]+\n"));
  CliResult json = RunSluice("predict --top 1 --json --model " + ShellQuote(unnamed) + " " + image);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("{\"class\": 0, \"name\": null, \"probability\": "));
  std::filesystem::remove_all(unnamed);
}

// An empty TFRecord file predicts nothing and says so: a wrong or unfinished file looks alike.
TEST_F(PredictCommandTest, AnEmptyTFRecordFileIsNamed) {
  const std::string empty = TempPath("empty.tfrecord");
  std::ofstream(empty).close();
  CliResult r = RunSluice("predict --json --model " + ShellQuote(*model_) + " " + empty);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(JsonNumber(r.out, "images"), 0) << r.out;
  EXPECT_THAT(r.err, HasSubstr("sluice predict: " + empty + ": no records"));
  std::filesystem::remove(empty);
}

// A file that is not a JPEG and a missing file fail the run (the others are still classified);
// with --skip-bad they are skipped, each named on stderr, and the run succeeds.
TEST_F(PredictCommandTest, BadImagesAndMissingFilesAreSkippedWithSkipBad) {
  const std::string garbage = TempPath("garbage.jpg");
  std::ofstream(garbage) << "not a JPEG";
  const std::string files = ShellQuote(*root_ + "/dark/1.jpg") + " " + ShellQuote(garbage) + " " +
                            ShellQuote(*root_ + "/missing.jpg") + " " +
                            ShellQuote(*root_ + "/light/2.jpg");
  CliResult failed = RunSluice("predict --top 1 --model " + ShellQuote(*model_) + " " + files);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_THAT(failed.out, HasSubstr("/dark/1.jpg: dark "));
  EXPECT_THAT(failed.out, HasSubstr("/light/2.jpg: light "));
  EXPECT_THAT(failed.err, HasSubstr(garbage));
  // Named once: the read error names the file itself.
  EXPECT_THAT(failed.err, HasSubstr("sluice predict: " + *root_ + "/missing.jpg: cannot open"));

  CliResult skipped =
      RunSluice("predict --top 1 --skip-bad --model " + ShellQuote(*model_) + " " + files);
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_EQ(TopOneNames(skipped.out), (std::vector<std::string>{"dark", "light"}));
  EXPECT_THAT(skipped.err, HasSubstr("skipped " + garbage));
  EXPECT_THAT(skipped.err, HasSubstr("2 images, 2 bad inputs skipped"));
}

// A TFRecord of another schema (small100's records have no image/encoded): the error is said
// once, with how many records after it failed the same way, not once per record.
TEST_F(PredictCommandTest, AFileOfAnotherSchemaSaysItsErrorOnce) {
  const std::string other = TestData("small100.tfrecord");
  CliResult failed = RunSluice("predict --model " + ShellQuote(*model_) + " " + ShellQuote(other));
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_THAT(failed.err, HasSubstr("sluice predict: " + other + ":0: "));
  EXPECT_THAT(failed.err, HasSubstr("image/encoded"));
  EXPECT_THAT(failed.err, Not(HasSubstr(other + ":1:")));
  EXPECT_THAT(failed.err, HasSubstr("sluice predict: ... and the same for 99 more inputs, up to " +
                                    other + ":99\n"));
  // JSON still has an entry for each.
  CliResult json =
      RunSluice("predict --json --model " + ShellQuote(*model_) + " " + ShellQuote(other));
  EXPECT_EQ(JsonNumber(json.out, "failed"), 100) << json.out;
  CliResult skipped =
      RunSluice("predict --skip-bad --model " + ShellQuote(*model_) + " " + ShellQuote(other));
  EXPECT_EQ(skipped.exit_code, 0);
  EXPECT_THAT(skipped.err, HasSubstr("sluice predict: skipped " + other + ":0: "));
  EXPECT_THAT(skipped.err, HasSubstr("... and the same for 99 more inputs"));
  EXPECT_THAT(skipped.err, HasSubstr("0 images, 100 bad inputs skipped"));

  // Files with the same error are each named; a good input between two bad records ends a run.
  const std::string a = TempPath("same_a.jpg"), b = TempPath("same_b.jpg");
  std::ofstream(a) << "not a JPEG";
  std::ofstream(b) << "not a JPEG";
  CliResult files =
      RunSluice("predict --skip-bad --model " + ShellQuote(*model_) + " " + ShellQuote(a) + " " +
                ShellQuote(*root_ + "/dark/1.jpg") + " " + ShellQuote(b) + " " + ShellQuote(a));
  EXPECT_THAT(files.err, HasSubstr("skipped " + a));
  EXPECT_THAT(files.err, HasSubstr("skipped " + b));
  EXPECT_THAT(files.err, Not(HasSubstr("the same for")));
}

}  // namespace
}  // namespace sluice
