// Csv(files, record_defaults, options): the records of CSV files as one scalar per column, like
// tf.data.experimental.CsvDataset.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <deque>
#include <type_traits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"
#include "dataset/line_files.h"

namespace sluice {
namespace {

// What is wrong with a record, and at which of its bytes.
struct SplitProblem {
  enum Kind { kNone, kUnclosedQuote, kTextAfterQuote, kQuoteInUnquotedField };
  Kind kind = kNone;
  size_t at = 0;
};

// Splits `record` into fields at `delim`, as views into `record` (or, for a quoted field with ""
// in it, into `unquoted`, whose strings must not move: it is a deque). With `quotes`, a field that
// starts with '"' runs to the matching '"' ("" inside is one quote) and may hold the delimiter and
// line breaks, and a '"' inside an unquoted field is an error, as in tf.data: that field was most
// likely meant to be quoted, and read as it stands it would split a record in two.
SplitProblem SplitFields(absl::string_view record, char delim, bool quotes,
                         std::vector<absl::string_view>& fields,
                         std::deque<std::string>& unquoted) {
  fields.clear();
  unquoted.clear();
  size_t i = 0;
  while (true) {
    if (quotes && i < record.size() && record[i] == '"') {
      const size_t open = i++;
      const size_t close = record.find('"', i);
      if (close == absl::string_view::npos) return {SplitProblem::kUnclosedQuote, open};
      if (close + 1 < record.size() && record[close + 1] == '"') {
        // Escaped quotes: unescape into a string of its own.
        std::string& field = unquoted.emplace_back();
        while (true) {
          if (i >= record.size()) return {SplitProblem::kUnclosedQuote, open};
          if (record[i] == '"') {
            if (i + 1 < record.size() && record[i + 1] == '"') {
              field.push_back('"');
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          field.push_back(record[i++]);
        }
        fields.push_back(field);
      } else {
        fields.push_back(record.substr(i, close - i));
        i = close + 1;
      }
      if (i < record.size() && record[i] != delim) return {SplitProblem::kTextAfterQuote, i - 1};
    } else {
      const size_t end = std::min(record.find(delim, i), record.size());
      const absl::string_view field = record.substr(i, end - i);
      if (quotes) {
        if (const size_t quote = field.find('"'); quote != absl::string_view::npos) {
          return {SplitProblem::kQuoteInUnquotedField, i + quote};
        }
      }
      fields.push_back(field);
      i = end;
    }
    if (i >= record.size()) return {};
    ++i;  // the delimiter
  }
}

// Whether `text`, read inside a quoted field, ends that field: it holds a '"' that is not one of
// a "" pair. SplitFields' rule, so that a record is read on only while SplitFields would find its
// quote unclosed.
bool ClosesQuotedField(absl::string_view text) {
  for (size_t i = text.find('"'); i != absl::string_view::npos; i = text.find('"', i)) {
    if (i + 1 < text.size() && text[i + 1] == '"') {
      i += 2;
      continue;
    }
    return true;
  }
  return false;
}

// A number in `field`: std::from_chars (exact, and fast), and absl's Simple* for what it leaves
// (a leading '+', surrounding whitespace), as tf.data's CsvDataset accepts them.
template <typename T>
bool ParseNumber(absl::string_view field, T* out) {
  const char* end = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(field.data(), end, *out);
  if (ec == std::errc() && ptr == end) return true;
  if constexpr (std::is_floating_point_v<T>) {
    return absl::SimpleAtof(field, out);
  } else {
    return absl::SimpleAtoi(field, out);
  }
}

class CsvDataset : public DatasetBase {
 public:
  CsvDataset(std::vector<std::string> files, std::vector<Tensor> defaults, CsvOptions options)
      : DatasetBase("Csv", {}),
        files_(std::move(files)),
        defaults_(std::move(defaults)),
        options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    SLUICE_RETURN_IF_ERROR(CheckOptions());
    return std::unique_ptr<IteratorBase>(new CsvIterator(this, ctx));
  }
  absl::Status AppendSourceFiles(std::vector<std::string>* files) const override {
    files->insert(files->end(), files_.begin(), files_.end());
    return absl::OkStatus();
  }
  // A scalar per column of its default's dtype, or with batch_size a [n] column (the last batch
  // may be short).
  ElementSpec ComputeElementSpec() const override {
    if (!CheckOptions().ok()) return ElementSpec();  // no elements: MakeIterator refuses it
    std::vector<TensorSpec> columns;
    for (const Tensor& d : defaults_) {
      columns.push_back({d.dtype(), options_.batch_size > 0
                                        ? PartialShape{PartialShape::kUnknownDim}
                                        : PartialShape()});
    }
    return ElementSpec(std::move(columns));
  }
  std::string Describe() const override {
    return absl::StrCat("Csv(", files_.size(), files_.size() == 1 ? " file, " : " files, ",
                        defaults_.size(), " columns)");
  }

 private:
  absl::Status CheckOptions() const {
    if (defaults_.empty()) return absl::InvalidArgumentError("Csv: no record_defaults");
    if (options_.batch_size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Csv: batch_size ", options_.batch_size, " must be >= 0"));
    }
    for (size_t i = 0; i < defaults_.size(); ++i) {
      const Tensor& d = defaults_[i];
      const DType t = d.dtype();
      if (t != DType::kInt32 && t != DType::kInt64 && t != DType::kFloat32 && t != DType::kBytes) {
        return absl::InvalidArgumentError(absl::StrCat("Csv: record_defaults[", i, "] is ",
                                                       DTypeName(t),
                                                       "; columns are int32, int64, float32 or "
                                                       "bytes"));
      }
      if (d.num_elements() > 1 || (d.rank() != 0 && d.num_elements() != 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Csv: record_defaults[", i,
            "] must be a scalar (the default) or empty (required), not ", d.shape().DebugString()));
      }
    }
    const std::vector<int64_t>& cols = options_.select_cols;
    if (!cols.empty()) {
      if (cols.size() != defaults_.size()) {
        return absl::InvalidArgumentError(absl::StrCat("Csv: ", cols.size(), " select_cols but ",
                                                       defaults_.size(), " record_defaults"));
      }
      for (size_t i = 0; i < cols.size(); ++i) {
        if (cols[i] < 0 || (i > 0 && cols[i] <= cols[i - 1])) {
          return absl::InvalidArgumentError(
              "Csv: select_cols must be distinct column indices >= 0 in ascending order");
        }
      }
    }
    if (options_.field_delim == '"' || options_.field_delim == '\n' ||
        options_.field_delim == '\r') {
      return absl::InvalidArgumentError("Csv: field_delim cannot be a quote or a newline");
    }
    return absl::OkStatus();
  }

  // Writes the column's value from `field` into row `row` of `out` (of the column's dtype): the
  // default when the field is empty or na_value.
  absl::Status ParseInto(size_t column, int64_t file_column, absl::string_view field,
                         const LineFiles& lines, Tensor& out, int64_t row) const {
    const Tensor& d = defaults_[column];
    auto where = [&] {
      return absl::StrCat(lines.reader().path(), ": line ", lines.first_line(), ", column ",
                          file_column + 1);
    };
    const bool missing =
        field.empty() || (!options_.na_value.empty() && field == options_.na_value);
    if (missing && d.num_elements() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": the field is missing and the column has no default"));
    }
    // A number column: the default, or the field parsed, named by the column's dtype when bad.
    const auto number = [&]<typename T>(T* value) -> absl::Status {
      if (missing) {
        *value = d.scalar<T>();
      } else if (!ParseNumber(field, value)) {
        return absl::InvalidArgumentError(absl::StrCat(where(), ": '", field.substr(0, 64),
                                                       "' is not a valid ", DTypeName(d.dtype())));
      }
      return absl::OkStatus();
    };
    switch (d.dtype()) {
      case DType::kInt32:
        return number(&out.data<int32_t>()[row]);
      case DType::kInt64:
        return number(&out.data<int64_t>()[row]);
      case DType::kFloat32:
        return number(&out.data<float>()[row]);
      default:
        out.data<std::string>()[row] = missing ? d.scalar<std::string>() : std::string(field);
        return absl::OkStatus();
    }
  }

  class CsvIterator : public IteratorBase {
   public:
    CsvIterator(const CsvDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource),
          d_(d),
          lines_(d->files_, {.compression = d->options_.compression,
                             .skip_lines = d->options_.header ? 1 : 0,
                             .max_line_bytes = d->options_.max_line_bytes,
                             .buffer_size = d->options_.buffer_size}) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      const int64_t batch = d_->options_.batch_size;
      if (batch == 0) {
        SLUICE_ASSIGN_OR_RETURN(const bool more, lines_.Next(&line_));
        if (!more) return std::nullopt;
        Element element = NewColumns(Shape{});
        SLUICE_RETURN_IF_ERROR(ParseRecordInto(element, 0));
        return element;
      }
      if (!pending_.ok()) return std::exchange(pending_, absl::OkStatus());
      Element columns = NewColumns(Shape{batch});
      int64_t rows = 0;
      while (rows < batch) {
        absl::Status s;
        absl::StatusOr<bool> more = lines_.Next(&line_);
        if (more.ok() && !*more) break;
        s = more.ok() ? ParseRecordInto(columns, rows) : more.status();
        if (s.ok()) {
          ++rows;
          continue;
        }
        // The records before it come first; the error follows in the next call.
        if (rows == 0) return s;
        pending_ = std::move(s);
        break;
      }
      if (rows == 0) return std::nullopt;
      if (rows < batch) {
        for (Tensor& column : columns) {
          Tensor shorter(column.dtype(), Shape{rows});
          for (int64_t r = 0; r < rows; ++r) CopyRow(column, r, shorter);
          column = std::move(shorter);
        }
      }
      return columns;
    }

    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      lines_.Save(state);
      if (!pending_.ok()) {
        (*state->mutable_ints())["pending_code"] = static_cast<int64_t>(pending_.code());
        (*state->mutable_blobs())["pending_message"] = std::string(pending_.message());
      }
      return absl::OkStatus();
    }

    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_RETURN_IF_ERROR(lines_.Restore(state));
      pending_ = absl::OkStatus();
      if (auto code = state.ints().find("pending_code"); code != state.ints().end()) {
        const auto message = state.blobs().find("pending_message");
        pending_ = absl::Status(code->second > 0 && code->second <= 16
                                    ? static_cast<absl::StatusCode>(code->second)
                                    : absl::StatusCode::kUnknown,
                                message == state.blobs().end() ? "" : message->second);
        if (pending_.ok()) pending_ = absl::UnknownError("restored error");
      }
      return absl::OkStatus();
    }

   private:
    // One tensor of `shape` per column, of the column's dtype.
    Element NewColumns(const Shape& shape) const {
      Element columns;
      columns.reserve(d_->defaults_.size());
      for (const Tensor& d : d_->defaults_) columns.emplace_back(d.dtype(), shape);
      return columns;
    }

    static void CopyRow(Tensor& from, int64_t row, Tensor& to) {
      switch (from.dtype()) {
        case DType::kInt32:
          to.data<int32_t>()[row] = from.data<int32_t>()[row];
          break;
        case DType::kInt64:
          to.data<int64_t>()[row] = from.data<int64_t>()[row];
          break;
        case DType::kFloat32:
          to.data<float>()[row] = from.data<float>()[row];
          break;
        default:
          to.data<std::string>()[row] = std::move(from.data<std::string>()[row]);
      }
    }

    // The record in line_ into row `row` of `columns`. A malformed record is InvalidArgument
    // naming the file, line and column; the file goes on. A quoted field open at the end of the
    // line holds a line break (RFC 4180, as tf.data reads it): the record goes on to the next
    // lines of the file, and errors name the line it starts on.
    absl::Status ParseRecordInto(Element& columns, int64_t row) {
      const CsvOptions& o = d_->options_;
      SplitProblem problem =
          SplitFields(line_, o.field_delim, o.use_quote_delim, fields_, unquoted_);
      while (problem.kind == SplitProblem::kUnclosedQuote) {
        // Lines inside the field cannot change how the record splits: split again only once the
        // field closes, so that a long field costs one pass, not one per line.
        size_t from;
        do {
          from = line_.size();
          SLUICE_ASSIGN_OR_RETURN(const bool more, lines_.AppendNextLine(&line_));
          if (!more) {
            return Malformed(absl::StrCat("the quote at ", Where(problem.at),
                                          " is not closed by the end of the file"));
          }
        } while (!ClosesQuotedField(absl::string_view(line_).substr(from)));
        problem = SplitFields(line_, o.field_delim, o.use_quote_delim, fields_, unquoted_);
      }
      switch (problem.kind) {
        case SplitProblem::kTextAfterQuote:
          return Malformed(absl::StrCat("a quoted field ends at ", Where(problem.at),
                                        " but the delimiter does not follow"));
        case SplitProblem::kQuoteInUnquotedField:
          return Malformed(absl::StrCat("a quote at ", Where(problem.at),
                                        " is inside an unquoted field (a field with quotes must "
                                        "be quoted, and its quotes doubled)"));
        default:
          break;
      }
      const size_t n = d_->defaults_.size();
      const std::vector<int64_t>& cols = o.select_cols;
      const bool count_ok =
          cols.empty() ? fields_.size() == n : static_cast<int64_t>(fields_.size()) > cols.back();
      if (!count_ok) {
        return Malformed(absl::StrCat(
            fields_.size(), " fields, expected ",
            cols.empty() ? absl::StrCat(n) : absl::StrCat("at least ", cols.back() + 1)));
      }
      for (size_t c = 0; c < n; ++c) {
        const int64_t file_column = cols.empty() ? static_cast<int64_t>(c) : cols[c];
        SLUICE_RETURN_IF_ERROR(
            d_->ParseInto(c, file_column, fields_[file_column], lines_, columns[c], row));
      }
      return absl::OkStatus();
    }

    absl::Status Malformed(absl::string_view problem) const {
      return absl::InvalidArgumentError(
          absl::StrCat(lines_.reader().path(), ": line ", lines_.first_line(), ": ", problem));
    }

    // Byte `at` of the record in line_: "column C" on its first line, else "line L, column C".
    std::string Where(size_t at) const {
      const size_t line_start = at == 0 ? 0 : line_.rfind('\n', at - 1) + 1;  // npos + 1 == 0
      if (line_start == 0) return absl::StrCat("column ", at + 1);
      const auto breaks =
          std::count(line_.begin(), line_.begin() + static_cast<std::ptrdiff_t>(at), '\n');
      return absl::StrCat("line ", lines_.first_line() + breaks, ", column ", at - line_start + 1);
    }

    const CsvDataset* d_;
    LineFiles lines_;
    std::string line_;                       // the record's line(s), reused between records
    std::vector<absl::string_view> fields_;  // into line_ or unquoted_
    std::deque<std::string> unquoted_;
    absl::Status pending_;  // batched: an error that follows the records read before it
  };

  std::vector<std::string> files_;
  std::vector<Tensor> defaults_;
  CsvOptions options_;
};

}  // namespace

Dataset Dataset::Csv(std::vector<std::string> files, std::vector<Tensor> record_defaults,
                     CsvOptions options) {
  return Dataset(std::make_shared<CsvDataset>(std::move(files), std::move(record_defaults),
                                              std::move(options)));
}

}  // namespace sluice
