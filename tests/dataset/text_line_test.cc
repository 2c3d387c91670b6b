#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/dataset/test_util.h"
#include "tests/file_util.h"
#include "tests/temp_dir.h"

namespace sluice {
namespace {

using ::sluice::testing::Collect;
using ::sluice::testing::Drain;
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<std::string> Lines(const Dataset& ds) {
  auto elements = Collect(ds);
  EXPECT_TRUE(elements.ok()) << elements.status();
  std::vector<std::string> lines;
  if (!elements.ok()) return lines;
  for (const Element& e : *elements) lines.push_back(e[0].scalar<std::string>());
  return lines;
}

TEST(TextLineTest, LinesWithoutTheirNewlines) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.txt", b = dir.path() + "/b.txt";
  // CRLF and LF, an empty line in the middle, no newline at the very end.
  WriteFile(a, "first\r\nsecond\n\nfourth\n");
  WriteFile(b, "x,1\ny,2");
  EXPECT_THAT(Lines(Dataset::TextLine({a, b})),
              ElementsAre("first", "second", "", "fourth", "x,1", "y,2"));
  // A lone "\r" inside a line stays; an empty file has no lines; a file of one "\n" has one.
  const std::string c = dir.path() + "/c.txt", d = dir.path() + "/d.txt", e = dir.path() + "/e";
  WriteFile(c, "a\rb\n");
  WriteFile(d, "");
  WriteFile(e, "\n");
  EXPECT_THAT(Lines(Dataset::TextLine({c, d, e})), ElementsAre("a\rb", ""));
}

TEST(TextLineTest, SkipsHeaderLinesInEveryFile) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.csv", b = dir.path() + "/b.csv", c = dir.path() + "/c.csv";
  WriteFile(a, "name,value\nx,1\ny,2\n");
  WriteFile(b, "name,value\nz,3\n");
  WriteFile(c, "name,value\n");  // a header only
  EXPECT_THAT(Lines(Dataset::TextLine({a, b, c}, {.skip_header_lines = 1})),
              ElementsAre("x,1", "y,2", "z,3"));
}

// num_parallel_reads, as tf.data's TextLineDataset: a line from each of N files in turn, the
// same order every run, with the options applied to each file, and exact checkpoints.
TEST(TextLineTest, ParallelReadsTakeALineFromEachFileInTurn) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.csv", b = dir.path() + "/b.csv", c = dir.path() + "/c.csv";
  WriteFile(a, "h\na1\na2\na3\n");
  WriteFile(b, "h\nb1\n");
  WriteFile(c, "h\nc1\nc2\n");
  const Dataset two =
      Dataset::TextLine({a, b, c}, {.skip_header_lines = 1, .num_parallel_reads = 2});
  // b ends at its second turn, which passes to a; c takes b's place at the turn after (tf.data's
  // interleave order).
  EXPECT_THAT(Lines(two), ElementsAre("a1", "b1", "a2", "a3", "c1", "c2"));
  EXPECT_EQ(two.element_spec(), ElementSpec({TensorSpec{DType::kBytes}}));
  ExpectCheckpointsResumeExactly(two, {0, 1, 3, 5, 6});
  const Dataset tuned =
      Dataset::TextLine({a, b, c}, {.skip_header_lines = 1, .num_parallel_reads = kAutotune});
  EXPECT_THAT(Lines(tuned), ::testing::UnorderedElementsAre("a1", "a2", "a3", "b1", "c1", "c2"));
}

TEST(TextLineTest, ReadsGzipAndZlibFiles) {
  ScopedTempDir dir;
  std::string text;
  std::vector<std::string> want;
  for (int i = 0; i < 5000; ++i) {
    want.push_back("line " + std::to_string(i) + std::string(i % 37, 'x'));
    text += want.back() + "\n";
  }
  const std::string gz = dir.path() + "/big.txt.gz";
  WriteGzip(gz, text);
  // A small buffer, so that lines cross buffer refills.
  EXPECT_THAT(Lines(Dataset::TextLine(gz, {.buffer_size = 100})), ElementsAreArray(want));

  uLongf size = compressBound(text.size());
  std::string deflated(size, '\0');
  ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                      reinterpret_cast<const Bytef*>(text.data()), text.size(), 6),
            Z_OK);
  deflated.resize(size);
  const std::string zlib = dir.path() + "/big.zz";
  WriteFile(zlib, deflated);
  EXPECT_THAT(Lines(Dataset::TextLine(zlib, {.compression = Compression::kZlib})),
              ElementsAreArray(want));
}

TEST(TextLineTest, CheckpointsResumeExactlyPlainAndCompressed) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.txt", b = dir.path() + "/b.txt.gz";
  std::string text;
  for (int i = 0; i < 30; ++i) text += "row " + std::to_string(i) + (i % 3 ? "\n" : "\r\n");
  WriteFile(a, "header\n" + text);
  WriteGzip(b, "header\n" + text + "last without newline");
  const Dataset ds = Dataset::TextLine({a, b}, {.skip_header_lines = 1, .buffer_size = 16});
  ExpectCheckpointsResumeExactly(ds, {0, 1, 15, 29, 30, 31, 45, 60, 61});
}

TEST(TextLineTest, AChangedFileIsDataLossOnRestore) {
  ScopedTempDir dir;
  const std::string gz = dir.path() + "/a.txt.gz";
  WriteGzip(gz, "1\n2\n3\n4\n");
  const Dataset ds = Dataset::TextLine(gz);
  auto it = ds.MakeIterator();
  ASSERT_TRUE(Drain(*it, 3).ok());
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  WriteGzip(gz, "1\n");  // shorter now
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto next = fresh->GetNext();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(next.status().message(), HasSubstr("has the file changed?"));
}

// A missing file is skipped whole; a line too long is skipped alone, and the file goes on.
TEST(TextLineTest, ErrorsNameTheFileAndLineAndSkipOnlyWhatIsBad) {
  ScopedTempDir dir;
  const std::string missing = dir.path() + "/missing.txt", long_lines = dir.path() + "/long.txt",
                    good = dir.path() + "/good.txt";
  WriteFile(long_lines, "short\n" + std::string(100, 'y') + "\nafter\n" + std::string(300, 'z'));
  WriteFile(good, "ok\n");
  const Dataset ds = Dataset::TextLine({missing, long_lines, good}, {.max_line_bytes = 64});
  auto it = ds.MakeIterator();
  auto first = it->GetNext();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(first.status().message(), HasSubstr("missing.txt"));
  // Sticky: the iterator's contract keeps the first error; IgnoreErrors goes on past it.
  int skipped = 0;
  EXPECT_THAT(Lines(ds.IgnoreErrors([&](const absl::Status&) { ++skipped; })),
              ElementsAre("short", "after", "ok"));
  EXPECT_EQ(skipped, 3);  // the missing file, line 2 and the last line (no "\n" at its end)
  auto plain = Dataset::TextLine({long_lines}, {.max_line_bytes = 64}).MakeIterator();
  ASSERT_TRUE(plain->GetNext().ok());
  auto too_long = plain->GetNext();
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(too_long.status().message(), HasSubstr("long.txt: line 2 (at offset 6)"));
  // Restored from a checkpoint before it, the long line is skipped again, and the file goes on.
  auto resumed = Dataset::TextLine({long_lines}, {.max_line_bytes = 64}).IgnoreErrors();
  auto it2 = resumed.MakeIterator();
  ASSERT_TRUE(it2->GetNext().ok());
  absl::StatusOr<std::string> saved = it2->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto again = resumed.MakeIterator();
  ASSERT_TRUE(again->Restore(*saved).ok());
  auto after = again->GetNext();
  ASSERT_TRUE(after.ok() && *after) << after.status();
  EXPECT_EQ((**after)[0].scalar<std::string>(), "after");
  EXPECT_EQ(
      Dataset::TextLine(good, {.skip_header_lines = -1}).MakeIterator()->GetNext().status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice
