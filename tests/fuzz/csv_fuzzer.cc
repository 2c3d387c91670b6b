// libFuzzer target: Dataset::Csv and Dataset::TextLine over the bytes as a file. The first byte
// picks the options: bit 0 quotes off, bit 1 a header line, bit 2 na_value "NA", bit 3 tabs as the
// delimiter, bit 4 select_cols {0, 2}. Invariants:
//  - TextLine yields as many lines as Csv yields records and errors together, or more where a
//    quoted field spans lines;
//  - Csv with batch_size 3 yields the same records (in [n] columns) and the same errors;
//  - a checkpoint after the first result restores to the same rest, with and without batches.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dataset/dataset.h"
#include "dataset/iterator.h"
#include "tests/fuzz/fuzz_util.h"

namespace sluice {
namespace {

using fuzz::Check;

// What `it` yields from here: elements (as their debug strings), up to the end or the first error
// (which the iterator keeps), at most 10,000.
std::vector<std::string> Results(Iterator& it) {
  std::vector<std::string> out;
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<std::optional<Element>> next = it.GetNext();
    if (!next.ok()) {
      out.push_back("error: " + std::string(next.status().message()));
      break;
    }
    if (!*next) break;
    out.push_back(ElementDebugString(**next));
  }
  return out;
}

// The records of `ds` one by one, errors skipped and counted.
std::vector<std::string> Records(const Dataset& ds, int64_t* errors) {
  std::vector<std::string> records;
  *errors = 0;
  auto it = ds.IgnoreErrors([&](const absl::Status&) { ++*errors; }).MakeIterator();
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    if (!next.ok() || !*next) break;
    records.push_back(ElementDebugString(**next));
  }
  return records;
}

// The rest after the first result, read on and after a save and restore.
void CheckResumes(const Dataset& ds) {
  auto it = ds.MakeIterator();
  absl::StatusOr<std::optional<Element>> first = it->GetNext();
  if (!first.ok() || !*first) return;
  absl::StatusOr<std::string> saved = it->Save();
  Check(saved.ok());
  auto fresh = ds.MakeIterator();
  Check(fresh->Restore(*saved).ok());
  Check(Results(*it) == Results(*fresh));
}

int TestOneInput(uint8_t mode, absl::string_view bytes) {
  static const std::string* path = new std::string(fuzz::ScratchPath("input.csv"));
  fuzz::WriteFileOrDie(*path, bytes);
  CsvOptions options{.header = (mode & 2) != 0,
                     .field_delim = (mode & 8) ? '\t' : ',',
                     .use_quote_delim = (mode & 1) == 0,
                     .na_value = (mode & 4) ? "NA" : "",
                     .max_line_bytes = 1 << 16};
  std::vector<Tensor> defaults = {Tensor(DType::kInt64, Shape{0}), Tensor::Scalar<float>(0.5f),
                                  Tensor::Scalar<std::string>("?")};
  if (mode & 16) {
    options.select_cols = {0, 2};
    defaults.pop_back();
  }
  const Dataset csv = Dataset::Csv({*path}, defaults, options);
  int64_t errors = 0;
  const std::vector<std::string> records = Records(csv, &errors);

  int64_t line_errors = 0;
  const std::vector<std::string> lines =
      Records(Dataset::TextLine(*path, {.skip_header_lines = options.header ? 1 : 0,
                                        .max_line_bytes = options.max_line_bytes}),
              &line_errors);
  if (line_errors == 0) {
    // A record is at least one line, and exactly one unless a quoted field spans lines (RFC 4180):
    // then it takes the lines up to its closing quote, or to the file's end if none closes it.
    const int64_t taken = static_cast<int64_t>(records.size()) + errors;
    const int64_t n_lines = static_cast<int64_t>(lines.size());
    if (!options.use_quote_delim || bytes.find('"') == absl::string_view::npos) {
      Check(n_lines == taken);
    } else {
      Check(taken <= n_lines);
    }
  }

  CsvOptions batched = options;
  batched.batch_size = 3;
  int64_t batch_errors = 0;
  auto it = Dataset::Csv({*path}, defaults, batched)
                .IgnoreErrors([&](const absl::Status&) { ++batch_errors; })
                .MakeIterator();
  int64_t batched_records = 0;
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    if (!next.ok() || !*next) break;
    const int64_t n = (**next)[0].num_elements();
    Check(n >= 1 && n <= 3);
    for (const Tensor& column : **next) Check(column.rank() == 1 && column.num_elements() == n);
    batched_records += n;
  }
  Check(batched_records == static_cast<int64_t>(records.size()));
  Check(batch_errors == errors);

  CheckResumes(csv);
  CheckResumes(Dataset::Csv({*path}, defaults, batched));
  return 0;
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return sluice::fuzz::WithMode(data, size, sluice::TestOneInput);
}
