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
using ::sluice::testing::ExpectCheckpointsResumeExactly;
using ::sluice::testing::ScopedTempDir;
using ::sluice::testing::WriteFile;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// "required" column defaults: empty tensors of the type.
Tensor Required(DType dtype) { return Tensor(dtype, Shape{0}); }

// The records as strings, "a|b|c" per record.
std::vector<std::string> Records(const Dataset& ds) {
  auto elements = Collect(ds);
  EXPECT_TRUE(elements.ok()) << elements.status();
  std::vector<std::string> out;
  if (!elements.ok()) return out;
  for (const Element& e : *elements) {
    std::string record;
    for (size_t i = 0; i < e.size(); ++i) {
      if (i > 0) record += "|";
      EXPECT_EQ(e[i].rank(), 0);
      switch (e[i].dtype()) {
        case DType::kInt32:
          record += std::to_string(e[i].scalar<int32_t>());
          break;
        case DType::kInt64:
          record += std::to_string(e[i].scalar<int64_t>()) + "L";
          break;
        case DType::kFloat32: {
          char buf[32];
          std::snprintf(buf, sizeof(buf), "%g", e[i].scalar<float>());
          record += buf;
          break;
        }
        default:
          record += "'" + e[i].scalar<std::string>() + "'";
      }
    }
    out.push_back(record);
  }
  return out;
}

TEST(CsvTest, TypedColumnsDefaultsAndHeader) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.csv";
  WriteFile(a,
            "id,count,score,name\n"
            "1,10,0.5,alpha\r\n"
            "2,,1e3,\"beta, with comma\"\n"
            "3,-7,,\"say \"\"hi\"\"\"\n"
            "4,5,NA,\n");
  const Dataset ds = Dataset::Csv({a},
                                  {Required(DType::kInt32), Tensor::Scalar<int64_t>(-1),
                                   Tensor::Scalar<float>(2.5f), Tensor::Scalar<std::string>("?")},
                                  {.header = true, .na_value = "NA"});
  EXPECT_THAT(Records(ds), ElementsAre("1|10L|0.5|'alpha'", "2|-1L|1000|'beta, with comma'",
                                       "3|-7L|2.5|'say \"hi\"'", "4|5L|2.5|'?'"));
}

TEST(CsvTest, SelectColsDelimiterAndQuotesOff) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.tsv";
  WriteFile(a, "x\t1\t\"q\"\t9\ny\t2\t\"r\t3\n");
  const Dataset ds =
      Dataset::Csv({a}, {Required(DType::kBytes), Required(DType::kInt64)},
                   {.field_delim = '\t', .use_quote_delim = false, .select_cols = {2, 3}});
  EXPECT_THAT(Records(ds), ElementsAre("'\"q\"'|9L", "'\"r'|3L"));
}

TEST(CsvTest, MalformedRecordsNameTheFileLineAndColumnAndTheFileGoesOn) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/bad.csv";
  WriteFile(a,
            "1,2\n"
            "3\n"             // too few fields
            "4,x\n"           // not a number
            "5,\n"            // required and missing
            "6,7\"\n"         // a quote inside an unquoted field
            "\"8\"9,1\n"      // text after a closing quote
            "2147483648,1\n"  // out of int32's range
            "10,11\n"
            "12,\"13\n");  // a quote not closed by the end of the file
  const Dataset ds = Dataset::Csv({a}, {Required(DType::kInt32), Required(DType::kInt32)});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  const std::vector<std::string> want = {
      "bad.csv: line 2: 1 fields, expected 2",
      "bad.csv: line 3, column 2: 'x' is not a valid int32",
      "bad.csv: line 4, column 2: the field is missing and the column has no default",
      "bad.csv: line 5: a quote at column 4 is inside an unquoted field",
      "bad.csv: line 6: a quoted field ends at column 3 but the delimiter does not follow",
      "bad.csv: line 7, column 1: '2147483648' is not a valid int32",
      "bad.csv: line 9: the quote at column 4 is not closed by the end of the file"};
  // Each error comes in its record's place; IgnoreErrors keeps the good records.
  auto skipping = ds.IgnoreErrors().MakeIterator();
  auto all = sluice::testing::Drain(*skipping);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1][0].scalar<int32_t>(), 10);
  std::vector<std::string> errors;
  auto counting = ds.IgnoreErrors([&](const absl::Status& s) {
                      errors.push_back(std::string(s.message()));
                    }).MakeIterator();
  ASSERT_TRUE(sluice::testing::Drain(*counting).ok());
  ASSERT_EQ(errors.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_THAT(errors[i], HasSubstr(want[i]));
  EXPECT_EQ(it->GetNext().status().code(), absl::StatusCode::kInvalidArgument);
}

// A quoted field may hold line breaks (RFC 4180), as in tf.data: the record runs on to the line
// where the field closes, the field keeps the file's line breaks ("\r\n" too), and errors name
// the line the record starts on. Before, the line after the break became a record of its own
// (here ('b"', 1)), which IgnoreErrors kept.
TEST(CsvTest, QuotedFieldsSpanLinesAsInTfData) {
  ScopedTempDir dir;
  const std::string a = dir.Write("a.csv", "\"a\nb\",1\n2,3\n");
  const std::vector<Tensor> defaults = {Tensor::Scalar<std::string>(""), Required(DType::kInt64)};
  EXPECT_THAT(Records(Dataset::Csv({a}, defaults).IgnoreErrors()),
              ElementsAre("'a\nb'|1L", "'2'|3L"));

  const std::string b = dir.Write("b.csv",
                                  "x,\"one\r\ntwo \"\"q\"\"\n\nthree\"\r\n"  // lines 1-4
                                  "y,\"\"\"\"\n"                             // line 5
                                  "z,\"a,\n\"\"\n\"\n"                       // lines 6-8
                                  "\"w\nv\",\"u\nt\"\n");                    // lines 9-11
  const std::vector<Tensor> two_bytes = {Required(DType::kBytes), Required(DType::kBytes)};
  EXPECT_THAT(Records(Dataset::Csv({b}, two_bytes)),
              ElementsAre("'x'|'one\r\ntwo \"q\"\n\nthree'", "'y'|'\"'", "'z'|'a,\n\"\n'",
                          "'w\nv'|'u\nt'"));
  // Checkpoints between records that span lines, and batches of them.
  ExpectCheckpointsResumeExactly(Dataset::Csv({b, a}, two_bytes), {0, 1, 2, 3, 4, 5, 6});
  auto batched = Collect(Dataset::Csv({b}, two_bytes, {.batch_size = 3}));
  ASSERT_TRUE(batched.ok()) << batched.status();
  ASSERT_EQ(batched->size(), 2u);
  EXPECT_EQ((*batched)[1][1].data<std::string>()[0], "u\nt");

  // Errors in a record that spans lines name the line it starts on, and where on a later line.
  const std::string c = dir.Write("c.csv",
                                  "1,\"a\nb\",x\n"    // lines 1-2: not a number
                                  "2,\"c\nd\"e,3\n"   // lines 3-4: text after the quote
                                  "3,\"f\ng\",4\n");  // lines 5-6
  const std::vector<Tensor> three = {Required(DType::kInt64), Required(DType::kBytes),
                                     Required(DType::kInt64)};
  std::vector<std::string> errors;
  auto kept = Collect(Dataset::Csv({c}, three).IgnoreErrors([&](const absl::Status& s) {
    errors.push_back(std::string(s.message()));
  }));
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0][1].scalar<std::string>(), "f\ng");
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0], HasSubstr("c.csv: line 1, column 3: 'x' is not a valid int64"));
  EXPECT_THAT(errors[1], HasSubstr("c.csv: line 3: a quoted field ends at line 4, column 2 but "
                                   "the delimiter does not follow"));

  // Without use_quote_delim a quote is text, and a line is a record.
  EXPECT_THAT(Records(Dataset::Csv({a}, defaults, {.use_quote_delim = false}).IgnoreErrors()),
              ElementsAre("'b\"'|1L", "'2'|3L"));
}

// As tf.data: with use_quote_delim, a quote inside an unquoted field is an error naming the file,
// line and column, so that IgnoreErrors skips and counts that record instead of keeping it.
TEST(CsvTest, AQuoteInsideAnUnquotedFieldIsAnError) {
  ScopedTempDir dir;
  const std::string a = dir.Write("q.csv", "1,2\nab\"c,3\n4,5\n");
  const std::vector<Tensor> defaults = {Required(DType::kBytes), Required(DType::kInt64)};
  auto it = Dataset::Csv({a}, defaults).MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  const absl::Status error = it->GetNext().status();
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error.message(),
              HasSubstr("q.csv: line 2: a quote at column 3 is inside an unquoted field"));
  int skipped = 0;
  EXPECT_THAT(
      Records(Dataset::Csv({a}, defaults).IgnoreErrors([&](const absl::Status&) { ++skipped; })),
      ElementsAre("'1'|2L", "'4'|5L"));
  EXPECT_EQ(skipped, 1);
}

// A record spanning lines is held to max_line_bytes as a line is: past it, DataLoss naming the
// line the record starts on; where the next record starts is unknown, so its file ends there and
// the next goes on.
TEST(CsvTest, ARecordSpanningLinesIsBoundedByMaxLineBytes) {
  ScopedTempDir dir;
  std::string open_quote = "1,\"";
  for (int i = 0; i < 20; ++i) open_quote += "0123456789\n";
  const std::string a = dir.Write("long.csv", "0,ok\n" + open_quote + "\"\n2,never read\n");
  const std::string b = dir.Write("next.csv", "3,next\n");
  const Dataset ds = Dataset::Csv({a, b}, {Required(DType::kInt64), Required(DType::kBytes)},
                                  {.max_line_bytes = 64});
  auto it = ds.MakeIterator();
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && *first);
  const absl::Status error = it->GetNext().status();
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(error.message(), HasSubstr("long.csv: the record from line 2 (at offset 5) runs on "
                                         "past 64 bytes (max_line_bytes)"));
  EXPECT_THAT(Records(ds.IgnoreErrors()), ElementsAre("0L|'ok'", "3L|'next'"));

  // A single line too long is skipped alone: where the next record starts is known.
  const std::string c = dir.Write("line.csv", "0,ok\n1," + std::string(100, 'x') + "\n2,on\n");
  EXPECT_THAT(Records(Dataset::Csv({c}, {Required(DType::kInt64), Required(DType::kBytes)},
                                   {.max_line_bytes = 64})
                          .IgnoreErrors()),
              ElementsAre("0L|'ok'", "2L|'on'"));
}

TEST(CsvTest, BadOptionsAreInvalidArgument) {
  const auto code = [](const Dataset& ds) { return ds.MakeIterator()->GetNext().status().code(); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(Dataset::Csv({"x"}, {})), kInvalid);
  EXPECT_EQ(code(Dataset::Csv({"x"}, {Tensor(DType::kUint8, Shape{})})), kInvalid);
  EXPECT_EQ(code(Dataset::Csv({"x"}, {Tensor(DType::kInt32, Shape{2})})), kInvalid);
  EXPECT_EQ(code(Dataset::Csv({"x"}, {Required(DType::kInt32)}, {.select_cols = {1, 2}})),
            kInvalid);
  EXPECT_EQ(code(Dataset::Csv({"x"}, {Required(DType::kInt32), Required(DType::kInt32)},
                              {.select_cols = {2, 1}})),
            kInvalid);
  EXPECT_EQ(code(Dataset::Csv({"x"}, {Required(DType::kInt32)}, {.field_delim = '"'})), kInvalid);
  EXPECT_EQ(code(Dataset::Csv({"/no/such.csv"}, {Required(DType::kInt32)})),
            absl::StatusCode::kNotFound);
}

TEST(CsvTest, GzipAndCheckpointsResumeExactly) {
  ScopedTempDir dir;
  std::string text = "a,b\n";
  for (int i = 0; i < 40; ++i) text += std::to_string(i) + "," + std::to_string(i * 0.25) + "\n";
  const std::string plain = dir.path() + "/p.csv", gz = dir.path() + "/g.csv.gz";
  WriteFile(plain, text);
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
  const Dataset ds = Dataset::Csv({plain, gz}, {Required(DType::kInt64), Required(DType::kFloat32)},
                                  {.header = true, .buffer_size = 32});
  auto records = Records(ds);
  ASSERT_EQ(records.size(), 80u);
  EXPECT_EQ(records[41], "1L|0.25");
  ExpectCheckpointsResumeExactly(ds, {0, 1, 20, 39, 40, 41, 79, 80});
}

// batch_size N gives what Csv(...).Batch(N) gives, parsed straight into the columns.
TEST(CsvTest, BatchSizeEqualsBatchingTheRecords) {
  ScopedTempDir dir;
  std::string text;
  for (int i = 0; i < 23; ++i) {
    text += std::to_string(i) + "," + std::to_string(i * 0.5) + ",\"s" + std::to_string(i) + "\"\n";
  }
  const std::string a = dir.path() + "/a.csv", b = dir.path() + "/b.csv";
  WriteFile(a, text);
  WriteFile(b, "100,1.5,x\n");
  const std::vector<Tensor> defaults = {Required(DType::kInt32), Required(DType::kFloat32),
                                        Required(DType::kBytes)};
  auto want = Collect(Dataset::Csv({a, b}, defaults).Batch(5));
  auto got = Collect(Dataset::Csv({a, b}, defaults, {.batch_size = 5}));
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->size(), 5u);  // 24 records: 4 of 5 and one of 4
  EXPECT_EQ((*got)[4][0].dim(0), 4);
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_TRUE(ElementsEqual((*want)[i], (*got)[i])) << i;
  }
  ExpectCheckpointsResumeExactly(Dataset::Csv({a, b}, defaults, {.batch_size = 5}),
                                 {0, 1, 3, 4, 5});
}

// A malformed record inside a batch: the records before it come as a shorter batch, then the
// error, then the batches go on; a checkpoint between the two keeps the error.
TEST(CsvTest, BatchSizeKeepsTheRecordsBeforeAnError) {
  ScopedTempDir dir;
  const std::string a = dir.path() + "/a.csv";
  WriteFile(a, "1\n2\nx\n4\n5\n6\n");
  const Dataset ds = Dataset::Csv({a}, {Required(DType::kInt64)}, {.batch_size = 4});
  auto it = ds.MakeIterator();
  auto first = it->GetNext();
  ASSERT_TRUE(first.ok() && *first);
  EXPECT_EQ((**first)[0].num_elements(), 2);
  auto saved = it->Save();
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto fresh = ds.MakeIterator();
  ASSERT_TRUE(fresh->Restore(*saved).ok());
  auto error = fresh->GetNext();
  EXPECT_EQ(error.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(error.status().message(), HasSubstr("a.csv: line 3, column 1: 'x'"));
  auto skipping = Collect(ds.IgnoreErrors());
  ASSERT_TRUE(skipping.ok());
  ASSERT_EQ(skipping->size(), 2u);
  EXPECT_EQ((*skipping)[1][0].num_elements(), 3);  // 4, 5, 6
  EXPECT_EQ((*skipping)[1][0].data<int64_t>()[0], 4);
}

}  // namespace
}  // namespace sluice
