// Tests the JSON emitter (core/json_writer.cc) end to end through `sluice inspect --json`
// on records written by hand; tests/core/json_writer_test.cc tests the writer alone.

#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

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

// The JSON line inspect prints for a one-record file holding `example`.
std::string InspectOne(const proto::Example& example) {
  const std::string path = TempPath("json.tfrecord");
  cli_test::WriteTFRecordFile(path, {example.SerializeAsString()});
  CliResult r = RunSluice("inspect --json " + ShellQuote(path));
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  EXPECT_EQ(lines.size(), 2u) << r.out;
  return lines.empty() ? "" : lines[0];
}

proto::Feature& AddFeature(proto::Example& example, const std::string& name) {
  return (*example.mutable_features()->mutable_feature())[name];
}

std::string OneBytesValue(const std::string& value) {
  proto::Example example;
  AddFeature(example, "b").mutable_bytes_list()->add_value(value);
  std::string line = InspectOne(example);
  const std::string prefix = R"({"b": {"type": "bytes_list", "values": [)";
  const std::string suffix = "]}}";
  if (line.size() < prefix.size() + suffix.size() || line.compare(0, prefix.size(), prefix) != 0) {
    ADD_FAILURE() << line;
    return line;
  }
  return line.substr(prefix.size(), line.size() - prefix.size() - suffix.size());
}

TEST(JsonWriterTest, HelperFramesRecordsLikeTheGoldenFile) {
  // The hand-written framing must match bytes written by the independent
  // implementation, or the tests below would prove nothing.
  std::string golden = testing::ReadFile(cli_test::TestData("small100.tfrecord"));
  ASSERT_GT(golden.size(), 12u);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(golden[i]);
  ASSERT_LT(length, 1000u);
  std::string first_record = golden.substr(0, 12 + length + 4);
  EXPECT_EQ(cli_test::FrameTFRecord(golden.substr(12, length)), first_record);
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(OneBytesValue("say \"hi\" \\o/"), R"("say \"hi\" \\o/")");
  EXPECT_EQ(OneBytesValue("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(OneBytesValue(std::string("\x00\x01\x1f\x7f", 4)), R"("\u0000\u0001\u001f\u007f")");
  EXPECT_EQ(OneBytesValue(""), R"("")");
  EXPECT_EQ(OneBytesValue("/ <>&'"), R"("/ <>&'")");
}

TEST(JsonWriterTest, PassesValidUtf8AndEscapesInvalidBytes) {
  EXPECT_EQ(OneBytesValue("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(OneBytesValue("\xff\xfe"), R"("\u00ff\u00fe")");
  EXPECT_EQ(OneBytesValue("a\xc3"), R"("a\u00c3")");                    // Truncated sequence.
  EXPECT_EQ(OneBytesValue("\xc3z"), R"("\u00c3z")");                    // Missing continuation.
  EXPECT_EQ(OneBytesValue("\x80"), R"("\u0080")");                      // Stray continuation.
  EXPECT_EQ(OneBytesValue("\xc0\xaf"), R"("\u00c0\u00af")");            // Overlong '/'.
  EXPECT_EQ(OneBytesValue("\xe0\x80\xaf"), R"("\u00e0\u0080\u00af")");  // Overlong, 3 bytes.
  EXPECT_EQ(OneBytesValue("\xed\xa0\x80"), R"("\u00ed\u00a0\u0080")");  // UTF-16 surrogate.
  EXPECT_EQ(OneBytesValue("\xf4\x90\x80\x80"), R"("\u00f4\u0090\u0080\u0080")");  // > U+10FFFF.
}

TEST(JsonWriterTest, BytesLongerThan64AreShownByLength) {
  EXPECT_EQ(OneBytesValue(std::string(64, 'x')), "\"" + std::string(64, 'x') + "\"");
  EXPECT_EQ(OneBytesValue(std::string(65, 'x')), R"({"length": 65})");
}

TEST(JsonWriterTest, FloatsUseTheShortestRoundTripText) {
  proto::Example example;
  auto* floats = AddFeature(example, "f").mutable_float_list();
  for (float v :
       {0.1f, 0.3f, -2.5f, 16777216.0f, 1e21f, 1.5e-7f, FLT_MAX,
        std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()}) {
    floats->add_value(v);
  }
  EXPECT_EQ(InspectOne(example),
            R"({"f": {"type": "float_list", "values": [0.1, 0.3, -2.5, 16777216, 1e+21, 1.5e-07, )"
            R"(3.4028235e+38, 1e-45, "nan", "inf", "-inf"]}})");
}

TEST(JsonWriterTest, Int64sAreExactAtBothEnds) {
  proto::Example example;
  auto* ints = AddFeature(example, "i").mutable_int64_list();
  ints->add_value(std::numeric_limits<int64_t>::min());
  ints->add_value(-1);
  ints->add_value(0);
  ints->add_value(std::numeric_limits<int64_t>::max());
  EXPECT_EQ(InspectOne(example),
            R"({"i": {"type": "int64_list", "values": [-9223372036854775808, -1, 0, )"
            R"(9223372036854775807]}})");
}

TEST(JsonWriterTest, KeysAreEscapedSortedAndEmptyListsAreShown) {
  proto::Example example;
  AddFeature(example, "z\"\n");  // No list set at all.
  AddFeature(example, "a").mutable_int64_list();
  AddFeature(example, "m").mutable_bytes_list()->add_value("x");
  EXPECT_EQ(InspectOne(example), R"({"a": {"type": "int64_list", "values": []}, )"
                                 R"("m": {"type": "bytes_list", "values": ["x"]}, )"
                                 R"("z\"\n": {"type": "none", "values": []}})");
}

TEST(JsonWriterTest, EmptyExampleIsAnEmptyObject) { EXPECT_EQ(InspectOne(proto::Example()), "{}"); }

}  // namespace
}  // namespace sluice
