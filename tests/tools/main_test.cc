// Tests the `sluice` dispatcher (tools/main.cc) by running the built binary.

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"

namespace sluice {
namespace {

using ::sluice::cli_test::CliResult;
using ::sluice::cli_test::RunSluice;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

TEST(MainTest, HelpListsCommandsWithTheirSummaries) {
  CliResult r = RunSluice("--help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("Usage: sluice COMMAND [options] [args]\n"));
  EXPECT_THAT(r.out,
              HasSubstr("Commands:\n  inspect  count, verify and print the records of TFRecord "
                        "files\n"));
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(RunSluice("-h").out, r.out);
  CliResult help = RunSluice("help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out, r.out);
}

TEST(MainTest, NoCommandListsCommandsOnStderrAndFails) {
  CliResult r = RunSluice("");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, RunSluice("--help").out);
}

TEST(MainTest, Version) {
  CliResult r = RunSluice("--version");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, MatchesRegex("sluice [0-9]+\\.[0-9]+\\.[0-9]+\n"));
  EXPECT_EQ(RunSluice("--version extra").exit_code, 2);
}

TEST(MainTest, HelpCommandShowsTheCommandsOwnUsage) {
  CliResult via_help = RunSluice("help inspect");
  CliResult via_flag = RunSluice("inspect --help");
  ASSERT_EQ(via_help.exit_code, 0) << via_help.err;
  ASSERT_EQ(via_flag.exit_code, 0) << via_flag.err;
  EXPECT_THAT(via_help.out, StartsWith("Usage: sluice inspect "));
  EXPECT_EQ(via_help.out, via_flag.out);
  // git's spelling, and a subcommand's help.
  EXPECT_EQ(RunSluice("--help inspect").out, via_flag.out);
  CliResult sub = RunSluice("help convert images");
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  EXPECT_EQ(sub.out, RunSluice("convert images --help").out);
  EXPECT_THAT(sub.out, StartsWith("Usage: sluice convert images"));
}

TEST(MainTest, UnknownCommandsAndOptionsAreUsageErrors) {
  CliResult r = RunSluice("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("sluice: unknown command 'frobnicate'"));
  EXPECT_EQ(r.out, "");

  r = RunSluice("help frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("sluice: unknown command 'frobnicate'"));

  r = RunSluice("help inspect extra");
  EXPECT_EQ(r.exit_code, 2);

  r = RunSluice("--verbose");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("sluice: unknown option '--verbose'"));
}

// A command that fails under --json still prints one JSON object, so that a script reading stdout
// learns why; the message goes to stderr as without --json.
TEST(MainTest, AFailureUnderJsonIsAnErrorObject) {
  const std::string missing = ::testing::TempDir() + "/no-such-dir-for-sluice";
  for (const std::string& command :
       {"bench --json --files '" + missing + "/*.tfrecord'",
        "train --json --model mlp --epochs 1 --data " + missing,
        "convert fashion-mnist --json --out " + missing + "/out --source " + missing,
        "export --json --model " + missing + " --out " + missing + "/m.onnx",
        "import --json " + missing + "/m.onnx --out " + missing + "/m",
        "predict --json --model " + missing + " " + missing + "/a.jpg"}) {
    CliResult r = RunSluice(command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.err;
    EXPECT_THAT(r.out, StartsWith("{\"error\": \"")) << command;
    EXPECT_THAT(r.out, HasSubstr(missing)) << command;
    EXPECT_THAT(r.out, HasSubstr("\"code\": \"")) << command;
    EXPECT_THAT(r.err, HasSubstr(missing)) << command;
  }
}

// So does a usage error (exit 2), wherever --json stands on the line: before the mistake, after
// it, or with a value the command's own check refuses. Without --json stdout stays empty.
TEST(MainTest, AUsageErrorUnderJsonIsAnErrorObject) {
  for (const std::string command :
       {"train --json --bacth 64", "train --batch 0 --json", "inspect --json=true",
        "bench --epochs --json", "predict --json --top 0 --model m a.jpg"}) {
    CliResult r = RunSluice(command);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
    EXPECT_THAT(r.out, StartsWith("{\"error\": \"")) << command;
    EXPECT_THAT(r.out, HasSubstr("\"code\": \"INVALID_ARGUMENT\"")) << command;
    EXPECT_THAT(r.err, HasSubstr("--help")) << command;
  }
  CliResult plain = RunSluice("train --bacth 64");
  EXPECT_EQ(plain.exit_code, 2);
  EXPECT_EQ(plain.out, "");
}

// A pipeline that yields nothing (an empty file) measured nothing: a failure, not 0 images/s.
TEST(MainTest, BenchOfAnEmptyPipelineFails) {
  const std::string empty = ::testing::TempDir() + "/sluice-main-test-empty.tfrecord";
  std::ofstream(empty).close();
  CliResult r = RunSluice("bench --json --files " + empty);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"error\": \"the pipeline ended without an element"));
  EXPECT_THAT(r.out, HasSubstr("\"code\": \"FAILED_PRECONDITION\""));
  std::remove(empty.c_str());
}

}  // namespace
}  // namespace sluice
