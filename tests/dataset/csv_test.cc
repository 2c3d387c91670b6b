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
            "\"6,7\n"         // unclosed quote
            "\"8\"9,1\n"      // text after a closing quote
            "2147483648,1\n"  // out of int32's range
            "10,11\n");
  const Dataset ds = Dataset::Csv({a}, {Required(DType::kInt32), Required(DType::kInt32)});
  auto it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  const std::vector<std::string> want = {
      "bad.csv: line 2: 1 fields, expected 2",
      "bad.csv: line 3, column 2: 'x' is not a valid int32",
      "bad.csv: line 4, column 2: the field is missing and the column has no default",
      "bad.csv: line 5: the quote at column 1 is not closed",
      "bad.csv: line 6: a quoted field ends at column 3 but the delimiter does not follow",
      "bad.csv: line 7, column 1: '2147483648' is not a valid int32"};
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
