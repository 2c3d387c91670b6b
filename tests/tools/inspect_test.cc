// Tests `sluice inspect` by running the built binary on the golden files.

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/proto/example.pb.h"
#include "tests/file_util.h"
#include "tests/tools/cli_test_util.h"

namespace sluice {
namespace {

using ::sluice::cli_test::CliResult;
using ::sluice::cli_test::Lines;
using ::sluice::cli_test::RunSluice;
using ::sluice::cli_test::ShellQuote;
using ::sluice::cli_test::TempPath;
using ::sluice::cli_test::TestData;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

CliResult Inspect(const std::string& args) { return RunSluice("inspect " + args); }

// The JSON line `sluice inspect --json` prints for record i of small100.
std::string Small100Json(const std::string& id, const std::string& name, const std::string& vec) {
  return R"({"id": {"type": "int64_list", "values": [)" + id +
         R"(]}, "name": {"type": "bytes_list", "values": [")" + name +
         R"("]}, "vec": {"type": "float_list", "values": [)" + vec + "]}}";
}

TEST(InspectTest, CountsRecordsWithoutShowingAny) {
  const std::string path = TestData("small100.tfrecord");
  CliResult r = Inspect("--records 0 " + ShellQuote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, path + "\n  100 records, 0 skipped, CRCs verified (compression: none)\n");
  EXPECT_EQ(r.err, "");
}

TEST(InspectTest, TextShowsFeatureNamesTypesAndCountsOfFirstFiveRecords) {
  const std::string path = TestData("small100.tfrecord");
  CliResult r = Inspect(ShellQuote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string record =
      ": 3 features\n"
      "    id    int64_list  1 value\n"
      "    name  bytes_list  1 value\n"
      "    vec   float_list  3 values\n";
  std::string expected = path + "\n";
  for (int i = 0; i < 5; ++i) expected += "  record " + std::to_string(i) + record;
  expected += "  100 records, 0 skipped, CRCs verified (compression: none)\n";
  EXPECT_EQ(r.out, expected);
}

TEST(InspectTest, JsonShowsExactValuesOfEveryRecord) {
  const std::string path = TestData("small100.tfrecord");
  CliResult r = Inspect("--json --records all " + ShellQuote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 101u);
  // vec is {i*0.5, -i, 1/(i+1)} as float32: -0 keeps its sign, 1/100 reads back as 0.01.
  EXPECT_EQ(lines[0], Small100Json("0", "item-0", "0, -0, 1"));
  EXPECT_EQ(lines[1], Small100Json("1", "item-1", "0.5, -1, 0.5"));
  EXPECT_EQ(lines[2], Small100Json("2", "item-2", "1, -2, 0.33333334"));
  EXPECT_EQ(lines[99], Small100Json("99", "item-99", "49.5, -99, 0.01"));
  EXPECT_EQ(lines[100],
            R"({"file": ")" + path + R"(", "records": 100, "skipped": 0, "compression": "none"})");
}

TEST(InspectTest, JsonShowsFiveRecordsByDefaultAndHonoursRecordsN) {
  const std::string path = ShellQuote(TestData("small100.tfrecord"));
  CliResult by_default = Inspect("--json " + path);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  std::vector<std::string> lines = Lines(by_default.out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[4], Small100Json("4", "item-4", "2, -4, 0.2"));
  EXPECT_THAT(lines[5], HasSubstr(R"("records": 100)"));

  CliResult two = Inspect("--json --records=2 " + path);
  ASSERT_EQ(two.exit_code, 0) << two.err;
  lines = Lines(two.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], Small100Json("1", "item-1", "0.5, -1, 0.5"));
  EXPECT_THAT(lines[2], HasSubstr(R"("records": 100)"));

  CliResult none = Inspect("--json --records 0 " + path);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_THAT(Lines(none.out), ElementsAre(HasSubstr(R"("records": 100, "skipped": 0)")));
}

// Everything but the summary line, which names the file and its compression.
std::vector<std::string> RecordLines(const CliResult& r) {
  std::vector<std::string> lines = Lines(r.out);
  if (!lines.empty()) lines.pop_back();
  return lines;
}

TEST(InspectTest, GzipAndZlibFilesShowTheSameRecordsAsThePlainFile) {
  CliResult plain = Inspect("--json --records all " + ShellQuote(TestData("small100.tfrecord")));
  CliResult gzip = Inspect("--json --records all " + ShellQuote(TestData("small100.tfrecord.gz")));
  CliResult zlib =
      Inspect("--json --records all " + ShellQuote(TestData("small100.tfrecord.zlib")));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(gzip.exit_code, 0) << gzip.err;
  ASSERT_EQ(zlib.exit_code, 0) << zlib.err;
  ASSERT_EQ(RecordLines(plain).size(), 100u);
  EXPECT_EQ(RecordLines(gzip), RecordLines(plain));
  EXPECT_EQ(RecordLines(zlib), RecordLines(plain));
  EXPECT_THAT(Lines(gzip.out).back(),
              HasSubstr(R"("records": 100, "skipped": 0, "compression": "gzip")"));
  EXPECT_THAT(Lines(zlib.out).back(),
              HasSubstr(R"("records": 100, "skipped": 0, "compression": "zlib")"));
}

TEST(InspectTest, CompressionFlagOverridesTheSuffix) {
  // A GZIP stream under a name that says nothing: only --compression can read it.
  const std::string path = TempPath("small100.bin");
  {
    std::ofstream out(path, std::ios::binary);
    out << testing::ReadFile(TestData("small100.tfrecord.gz"));
  }
  CliResult plain = Inspect("--json --records all " + ShellQuote(TestData("small100.tfrecord")));
  CliResult flagged = Inspect("--json --records all --compression gzip " + ShellQuote(path));
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_EQ(RecordLines(flagged), RecordLines(plain));

  CliResult guessed = Inspect("--records 0 " + ShellQuote(path));
  EXPECT_EQ(guessed.exit_code, 1);
  EXPECT_THAT(guessed.err, HasSubstr(path));

  // And a plain file read as zlib fails instead of being silently read as plain.
  CliResult wrong =
      Inspect("--records 0 --compression zlib " + ShellQuote(TestData("small100.tfrecord")));
  EXPECT_EQ(wrong.exit_code, 1);
  std::remove(path.c_str());
}

TEST(InspectTest, ImagesShowBytesLengthsForLargeValues) {
  CliResult r = Inspect("--json " + ShellQuote(TestData("images3.tfrecord")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 4u);
  // Lengths and labels from images3.expected.json.
  auto expected = [](const std::string& label, const std::string& length) {
    return R"({"image/class/label": {"type": "int64_list", "values": [)" + label +
           R"(]}, "image/encoded": {"type": "bytes_list", "values": [{"length": )" + length +
           R"(}]}, "image/format": {"type": "bytes_list", "values": ["jpeg"]}, )"
           R"("image/object/bbox/xmin": {"type": "float_list", "values": [0.25, 0.5]}})";
  };
  EXPECT_EQ(lines[0], expected("1", "57517"));
  EXPECT_EQ(lines[1], expected("4", "58200"));
  EXPECT_EQ(lines[2], expected("7", "68135"));
  EXPECT_THAT(lines[3], HasSubstr(R"("records": 3, "skipped": 0)"));
}

TEST(InspectTest, CorruptRecordFailsNamingFileRecordAndOffset) {
  const std::string path = TestData("small100.corrupt-record41.tfrecord");
  CliResult r = Inspect("--json --records 0 " + ShellQuote(path));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path));
  EXPECT_THAT(r.err, HasSubstr("record 41"));
  EXPECT_THAT(r.err, HasSubstr("offset"));
  // Records 0..40 were read before the corrupt one.
  EXPECT_THAT(r.out, HasSubstr(R"("records": 41, "skipped": 0)"));
  EXPECT_THAT(r.out, HasSubstr(R"("error": )"));
}

TEST(InspectTest, SkipCorruptReadsPastTheCorruptRecord) {
  const std::string path = ShellQuote(TestData("small100.corrupt-record41.tfrecord"));
  CliResult r = Inspect("--json --records all --skip-corrupt " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 100u);
  EXPECT_EQ(lines[40], Small100Json("40", "item-40", "20, -40, 0.024390243"));
  EXPECT_EQ(lines[41], Small100Json("42", "item-42", "21, -42, 0.023255814"));
  EXPECT_EQ(lines[98], Small100Json("99", "item-99", "49.5, -99, 0.01"));
  EXPECT_THAT(lines[99], HasSubstr(R"("records": 99, "skipped": 1)"));
  EXPECT_THAT(r.err, HasSubstr("sluice inspect: skipped "));
  EXPECT_THAT(r.err, HasSubstr("small100.corrupt-record41.tfrecord: record 41 at offset 3147: "
                               "data CRC mismatch (stored 0x70e15416, computed 0xca5892b5)"));

  CliResult text = Inspect("--records 0 --skip-corrupt " + path);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("  99 records, 1 skipped (corrupt), the others' CRCs verified "
                                  "(compression: none)"));
}

TEST(InspectTest, SkipCorruptOfAFileWithNoValidRecordFails) {
  const std::string text = TempPath("notes.txt");
  {
    std::ofstream out(text);
    out << "these are notes, not records\n" << std::string(200, 'x') << "\n";
  }
  CliResult r = Inspect("--skip-corrupt " + ShellQuote(text));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr(text + ": no valid record, 1 skipped: not a TFRecord file"));
  EXPECT_THAT(r.out, HasSubstr("  0 records, 1 skipped: no valid record"));  // read to its end
  // An empty file is an empty TFRecord file, not a wrong one.
  const std::string empty = TempPath("empty.tfrecord");
  std::ofstream(empty).close();
  CliResult e = Inspect("--skip-corrupt " + ShellQuote(empty));
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_THAT(e.out, HasSubstr("  0 records, 0 skipped"));
  std::remove(text.c_str());
  std::remove(empty.c_str());
}

TEST(InspectTest, TruncatedFileFailsNamingRecord99) {
  const std::string path = TestData("small100.truncated.tfrecord");
  CliResult r = Inspect("--records 0 " + ShellQuote(path));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path));
  EXPECT_THAT(r.err, HasSubstr("record 99"));
  EXPECT_THAT(r.out, HasSubstr("stopped by an error after 99 records"));
}

TEST(InspectTest, MissingFileFails) {
  const std::string path = TempPath("does-not-exist.tfrecord");
  CliResult r = Inspect(ShellQuote(path));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(path));
}

TEST(InspectTest, SeveralFilesAreEachReportedThenTotalled) {
  const std::string small = TestData("small100.tfrecord");
  const std::string images = TestData("images3.tfrecord");
  CliResult r = Inspect("--records 0 " + ShellQuote(small) + " " + ShellQuote(images));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, small + "\n  100 records, 0 skipped, CRCs verified (compression: none)\n" +
                       images + "\n  3 records, 0 skipped, CRCs verified (compression: none)\n" +
                       "total: 2 files, 103 records, 0 skipped, 0 failed\n");

  CliResult json = Inspect("--json --records 0 " + ShellQuote(small) + " " + ShellQuote(images));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(Lines(json.out),
              ElementsAre(HasSubstr(R"("records": 100)"), HasSubstr(R"("records": 3)"),
                          R"({"files": 2, "records": 103, "skipped": 0, "failed": 0})"));
}

TEST(InspectTest, AFailingFileDoesNotStopTheOthers) {
  const std::string missing = TempPath("missing.tfrecord");
  const std::string images = TestData("images3.tfrecord");
  CliResult r = Inspect("--json --records 0 " + ShellQuote(missing) + " " + ShellQuote(images));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(missing));
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr(R"("records": 0, "skipped": 0)"));
  EXPECT_THAT(lines[0], HasSubstr(R"("error": )"));
  EXPECT_THAT(lines[1], HasSubstr(R"("records": 3, "skipped": 0)"));
  EXPECT_THAT(lines[1], Not(HasSubstr("error")));
  EXPECT_EQ(lines[2], R"({"files": 2, "records": 3, "skipped": 0, "failed": 1})");
}

TEST(InspectTest, RecordThatIsNotAnExampleIsReportedAndReadingGoesOn) {
  proto::Example example;
  (*example.mutable_features()->mutable_feature())["x"].mutable_int64_list()->add_value(7);
  const std::string good = example.SerializeAsString();
  // 0x0a: field 1, length-delimited, claiming 127 bytes that are not there.
  const std::string bad("\x0a\x7f", 2);
  const std::string path = TempPath("not-example.tfrecord");
  cli_test::WriteTFRecordFile(path, {good, bad, good});

  CliResult json = Inspect("--json " + ShellQuote(path));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::string x7 = R"({"x": {"type": "int64_list", "values": [7]}})";
  EXPECT_THAT(Lines(json.out),
              ElementsAre(x7, "null", x7, HasSubstr(R"("records": 3, "skipped": 0)")));
  // Record 1 starts after record 0's data and its 16 bytes of framing.
  const std::string where = path + ": record 1 at offset " + std::to_string(good.size() + 16);
  EXPECT_EQ(json.err, "sluice inspect: " + where + " (2 bytes) is not a tf.train.Example\n");

  CliResult text = Inspect(ShellQuote(path));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("  record 0: 1 feature\n"
                                  "    x  int64_list  1 value\n"
                                  "  record 1: not a tf.train.Example (2 bytes)\n"
                                  "  record 2: 1 feature\n"));
  std::remove(path.c_str());
}

TEST(InspectTest, HelpListsEveryOptionWithItsDefault) {
  CliResult r = Inspect("--help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("Usage: sluice inspect [options] FILE...\n"));
  EXPECT_THAT(r.out, HasSubstr("  --records N "));
  EXPECT_THAT(r.out, HasSubstr("(default: 5)"));
  EXPECT_THAT(r.out, HasSubstr("  --compression NAME "));
  EXPECT_THAT(r.out, HasSubstr("(default: auto)"));
  EXPECT_THAT(r.out, HasSubstr("  --json "));
  EXPECT_THAT(r.out, HasSubstr("  --skip-corrupt "));
  EXPECT_THAT(r.out, HasSubstr("  -h, --help "));
  EXPECT_EQ(r.err, "");
}

TEST(InspectTest, BadCommandLinesAreUsageErrors) {
  const std::string path = ShellQuote(TestData("small100.tfrecord"));
  struct Case {
    std::string args;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"--frobnicate " + path, "unknown option '--frobnicate'"},
           {path + " --records", "option --records needs a value"},
           {"--records --json " + path, "option --records needs a value"},
           {"--records abc " + path, "--records takes a count >= 0 or 'all', not 'abc'"},
           {"--records -1 " + path, "--records takes a count >= 0 or 'all', not '-1'"},
           {"--compression lzma " + path, "--compression takes none, gzip, zlib or auto"},
           {"--json", "missing argument FILE"},
       }) {
    CliResult r = Inspect(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_THAT(r.err, HasSubstr("sluice inspect: " + c.message)) << c.args;
    EXPECT_THAT(r.err, HasSubstr("Run 'sluice inspect --help' for usage.")) << c.args;
    // Under --json, the error as an object on stdout too (MainTest has more of those).
    if (absl::StrContains(c.args, "--json")) {
      EXPECT_THAT(r.out, HasSubstr("\"code\": \"INVALID_ARGUMENT\"")) << c.args;
    } else {
      EXPECT_EQ(r.out, "") << c.args;
    }
  }
}

}  // namespace
}  // namespace sluice
