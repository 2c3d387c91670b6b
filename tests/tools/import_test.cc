// `sluice import` (tools/import_command.cc): an ONNX file written by ONNX's own helper
// (tests/onnx/make_models.py) becomes a saved model that `sluice export` writes again; the
// command-line errors.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx_runtime.h"
#include "tests/tools/cli_test_util.h"

namespace sluice::cli_test {
namespace {

using ::testing::HasSubstr;

TEST(ImportCommandTest, ImportsSavesAndExportsAgain) {
  const std::string onnx = TempPath("operators.onnx");
  std::string output;
  ASSERT_EQ(testing::Shell(absl::StrCat(testing::kPython, " ", ShellQuote(testing::kOnnxDir),
                                        "/make_models.py operators ", ShellQuote(onnx)),
                           &output),
            0)
      << output;
  const std::string dir = TempPath("imported");
  CliResult r = RunSluice("import --json " + ShellQuote(onnx) + " --out " + ShellQuote(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The operators graph's 24 layers, its Sigmoid, swish-gate Mul and Tanh included.
  EXPECT_THAT(r.out, HasSubstr("\"layers\": 24"));
  EXPECT_THAT(r.out, HasSubstr("\"input\": [9, 8, 3]"));
  // (6*3*3*3 + 6) + 4*6 (batch norm) + 4*6*2*3 + (4*4 + 4) + (4*8 + 4) + 4*1*3*3 (depthwise)
  // + (5*60 + 5) + 5*3.
  EXPECT_THAT(r.out, HasSubstr("\"parameters\": 748"));
  const std::string again = TempPath("again.onnx");
  CliResult e = RunSluice("export --model " + ShellQuote(dir) + " --out " + ShellQuote(again));
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(testing::CheckerErrors(again), "");
  CliResult summary = RunSluice("import --summary " + ShellQuote(onnx) + " --out " +
                                ShellQuote(TempPath("imported2")));
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("stem.conv (conv2d)"));
}

TEST(ImportCommandTest, ErrorsAndHelp) {
  EXPECT_EQ(RunSluice("import --out d").exit_code, 2);
  EXPECT_EQ(RunSluice("import x.onnx").exit_code, 2);
  EXPECT_EQ(RunSluice("import x.onnx --out d --height -1").exit_code, 2);
  CliResult missing = RunSluice("import " + ShellQuote(TempPath("none.onnx")) + " --out " +
                                ShellQuote(TempPath("d")));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("none.onnx"));
  CliResult help = RunSluice("import --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--height"));
}

}  // namespace
}  // namespace sluice::cli_test
