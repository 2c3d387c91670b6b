// Tests the option parser (tools/command_line.cc) through `sluice inspect`,
// the binary being the only place the tools/ sources are linked.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_test_util.h"

namespace sluice {
namespace {

using ::sluice::cli_test::CliResult;
using ::sluice::cli_test::Lines;
using ::sluice::cli_test::RunSluice;
using ::sluice::cli_test::ShellQuote;
using ::sluice::cli_test::TestData;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Small100() { return ShellQuote(TestData("small100.tfrecord")); }

TEST(CommandLineTest, UsageIsGeneratedFromTheDeclarations) {
  CliResult r = RunSluice("inspect --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "Usage: sluice inspect [options] FILE...\n"
            "\n"
            "Counts the records of TFRecord files, verifies every CRC and shows each feature's\n"
            "name, type and number of values for the first records. A corrupt record stops\n"
            "the file with exit status 1 unless --skip-corrupt is given.\n"
            "\n"
            "Arguments:\n"
            "  FILE...             TFRecord files to read\n"
            "\n"
            "Options:\n"
            "  --records N         records to show per file: a count, 0 for none, or 'all' "
            "(default: 5)\n"
            "  --compression NAME  none, gzip or zlib; auto guesses from the suffix (.gz, .zlib) "
            "(default: auto)\n"
            "  --json              print one JSON object per record, then one summary object per "
            "file\n"
            "  --skip-corrupt      read past corrupt records and count them as skipped\n"
            "  -h, --help          show this help and exit\n");
  EXPECT_EQ(RunSluice("inspect -h").out, r.out);
}

TEST(CommandLineTest, HelpWinsOverOtherMistakes) {
  CliResult r = RunSluice("inspect --frobnicate --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, StartsWith("Usage: sluice inspect"));
  EXPECT_EQ(r.err, "");
}

TEST(CommandLineTest, ValueMayFollowAsNextArgumentOrAfterEquals) {
  CliResult spaced = RunSluice("inspect --json --records 3 " + Small100());
  CliResult joined = RunSluice("inspect --json --records=3 " + Small100());
  ASSERT_EQ(spaced.exit_code, 0) << spaced.err;
  EXPECT_EQ(Lines(spaced.out).size(), 4u);
  EXPECT_EQ(joined.out, spaced.out);
}

TEST(CommandLineTest, PositionalArgumentsMayComeBeforeOptions) {
  CliResult r = RunSluice("inspect " + Small100() + " --records 0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 1u);
  EXPECT_THAT(r.out, HasSubstr(R"("records": 100)"));
}

TEST(CommandLineTest, FlagsAcceptExplicitTrueOrFalse) {
  CliResult on = RunSluice("inspect --records 0 --json=true " + Small100());
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_THAT(on.out, StartsWith("{"));
  CliResult off = RunSluice("inspect --records 0 --json=false " + Small100());
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_THAT(off.out, HasSubstr("  100 records, 0 skipped"));

  CliResult bad = RunSluice("inspect --json=maybe " + Small100());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("flag --json takes no value, or =true or =false; got 'maybe'"));
}

TEST(CommandLineTest, DoubleDashEndsOptions) {
  // After "--", "--json" is a file name (which does not exist), not the flag.
  CliResult r = RunSluice("inspect --records 0 -- --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--json"));
  EXPECT_EQ(r.out, "");
}

TEST(CommandLineTest, RepeatedOptionsAndShortOptionsAreErrors) {
  CliResult twice = RunSluice("inspect --records 1 --records 2 " + Small100());
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_THAT(twice.err, HasSubstr("option --records given twice"));

  CliResult short_option = RunSluice("inspect -r 1 " + Small100());
  EXPECT_EQ(short_option.exit_code, 2);
  EXPECT_THAT(short_option.err, HasSubstr("unknown option '-r'"));

  CliResult unknown_with_value = RunSluice("inspect --limit=3 " + Small100());
  EXPECT_EQ(unknown_with_value.exit_code, 2);
  EXPECT_THAT(unknown_with_value.err, HasSubstr("unknown option '--limit'"));
}

// Numeric options are checked before any work starts: exit status 2 and a message
// that names the option, its range and what was given.
TEST(CommandLineTest, NumericOptionsNameTheirRange) {
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {"bench --files x --batch 0", "--batch takes an integer >= 1, not '0'"},
           {"bench --pipeline skewed --skew x", "--skew takes an integer >= 1, not 'x'"},
           {"bench --files x --seconds -1", "--seconds takes a number > 0, not '-1'"},
           {"bench --files x --seconds nan", "--seconds takes a number > 0, not 'nan'"},
           {"bench --files x --grid --grid-seconds 0",
            "--grid-seconds takes a number > 0, not '0'"},
           {"bench --pipeline skewed --device tpu",
            "--device: want cpu, cuda or cuda:N, got 'tpu'"},
           {"convert fashion-mnist --out /nonexistent/x --quality 101",
            "--quality takes an integer in 1..100, not '101'"},
           {"convert fashion-mnist --out /nonexistent/x --shards 100000",
            "--shards takes an integer in 1..99999, not '100000'"},
           // A bounded option names its whole range, whatever is wrong (NaN included).
           {"train --data /nonexistent --momentum -0.5 --optimizer sgd",
            "--momentum takes a number in [0, 1], not '-0.5'"},
           {"train --data /nonexistent --momentum nan --optimizer sgd",
            "--momentum takes a number in [0, 1], not 'nan'"},
           // strtod's hex is no one's number.
           {"train --data /nonexistent --lr 0x10", "--lr takes a number > 0, not '0x10'"},
           {"train --data /nonexistent --clip-norm inf",
            "--clip-norm takes a number >= 0, not 'inf'"},
           {"train --data /nonexistent --epochs 99999999999999999999",
            "--epochs takes an integer >= 1, not '99999999999999999999' (beyond "
            "9223372036854775807)"},
           // 2^32 + 1 became 1 thread in the backend's int.
           {"train --data /nonexistent --threads 4294967297",
            "--threads takes an integer in 1..4096, not '4294967297'"},
       }) {
    CliResult r = RunSluice(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
  }
}

// CI has no GPU: `bench --device cuda:N` fails with the backend's reason before it measures.
TEST(CommandLineTest, BenchDeviceWithoutAGpuFailsWithTheReason) {
  CliResult r = RunSluice("bench --pipeline skewed --seconds 1 --device cuda:1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(r.err, HasSubstr("--device cuda:1: "));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("images/s")));
}

}  // namespace
}  // namespace sluice
