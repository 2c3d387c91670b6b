// PaddedBatch(batch_size, {padded_shapes, padding_values, drop_remainder}):
// like Batch, but the elements of a batch may differ in shape. Each component
// is padded to its padded shape (-1 in a dimension: the batch's longest there;
// no padded_shapes: the longest in every dimension) with its padding value
// (default zero, or the empty string). The batch is allocated once, filled
// with the padding value, and each element is copied into its row in place.
//
// As in Batch, an input error is returned as it is and the elements already
// gathered for the interrupted batch are dropped with it.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "dataset/batching_iterator.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

std::string SpecString(const std::vector<int64_t>& spec) {
  return absl::StrCat("[", absl::StrJoin(spec, ", "), "]");
}

// Sets every value of `t` to the scalar `value` (zero / empty when null).
void Fill(const Tensor* value, Tensor& t) {
  const int64_t n = t.num_elements();
  if (t.dtype() == DType::kBytes) {
    if (value == nullptr || value->scalar<std::string>().empty()) return;  // Already empty.
    const std::string& v = value->scalar<std::string>();
    for (std::string& s : t.flat<std::string>()) s = v;
    return;
  }
  const size_t size = DTypeSize(t.dtype());
  char* out = static_cast<char*>(t.raw_data());
  const char* v = value ? static_cast<const char*>(value->raw_data()) : nullptr;
  if (v == nullptr || std::all_of(v, v + size, [](char c) { return c == 0; })) {
    if (n > 0) std::memset(out, 0, static_cast<size_t>(n) * size);
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * size, v, size);
}

// Copies `src` into row `row` of `dst`, whose rows are at least as large as
// `src` in every dimension: one contiguous run per innermost line of `src`.
void CopyPadded(const Tensor& src, int64_t row, Tensor& dst) {
  if (src.num_elements() == 0) return;
  const int r = src.rank();
  const int64_t line_len = r == 0 ? 1 : src.dim(r - 1);
  const int64_t lines = src.num_elements() / line_len;
  // Strides (in values) of a row of `dst`.
  std::vector<int64_t> stride(static_cast<size_t>(r), 1);
  for (int d = r - 2; d >= 0; --d) stride[d] = stride[d + 1] * dst.dim(d + 2);
  const int64_t row_values = dst.num_elements() / dst.dim(0);
  std::vector<int64_t> index(static_cast<size_t>(std::max(r - 1, 0)), 0);
  const bool bytes = src.dtype() == DType::kBytes;
  const size_t size = DTypeSize(src.dtype());
  for (int64_t line = 0; line < lines; ++line) {
    int64_t offset = row * row_values;
    for (int d = 0; d < r - 1; ++d) offset += index[d] * stride[d];
    if (bytes) {
      const std::string* s = src.data<std::string>() + line * line_len;
      std::string* o = dst.data<std::string>() + offset;
      for (int64_t k = 0; k < line_len; ++k) o[k] = s[k];
    } else {
      std::memcpy(static_cast<char*>(dst.raw_data()) + offset * size,
                  static_cast<const char*>(src.raw_data()) + line * line_len * size,
                  static_cast<size_t>(line_len) * size);
    }
    // Advance the index over src's outer dimensions, last fastest.
    for (int d = r - 2; d >= 0; --d) {
      if (++index[d] < src.dim(d)) break;
      index[d] = 0;
    }
  }
}

class PaddedBatchDataset : public DatasetBase {
 public:
  PaddedBatchDataset(std::shared_ptr<const DatasetBase> input, int64_t batch_size,
                     PaddedBatchOptions options)
      : DatasetBase("PaddedBatch", {std::move(input)}),
        batch_size_(batch_size),
        options_(std::move(options)) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    if (n < 0) return n;                               // infinite or unknown, like the input
    if (batch_size_ <= 0) return kUnknownCardinality;  // MakeIterator reports it
    // Not (n + b - 1) / b, which overflows for a batch of INT64_MAX ("everything").
    return n / batch_size_ + (!options_.drop_remainder && n % batch_size_ != 0 ? 1 : 0);
  }

  // As tf.data's: the batch dimension as Batch's; every other dimension its padded_shapes size,
  // or where that is -1 (or no padded_shapes are given) the input's, when every element has it.
  ElementSpec ComputeElementSpec() const override {
    const ElementSpec& in = inputs()[0]->element_spec();
    const std::vector<std::vector<int64_t>>& padded = options_.padded_shapes;
    // Padded shapes that do not fit the input make every batch an error: nothing to describe.
    if (!in.known() || (!padded.empty() && padded.size() != in.components().size())) {
      return ElementSpec();
    }
    std::vector<TensorSpec> rows = in.components();
    for (size_t k = 0; k < rows.size() && !padded.empty(); ++k) {
      const PartialShape& given = rows[k].shape;
      const std::vector<int64_t>& p = padded[k];
      if (!given.unknown_rank() && given.rank() != static_cast<int>(p.size())) return ElementSpec();
      std::vector<int64_t> dims(p.size());
      for (size_t d = 0; d < p.size(); ++d) {
        const bool longest = p[d] < 0 && !given.unknown_rank();
        dims[d] = longest ? given.dim(static_cast<int>(d)) : p[d];
      }
      rows[k].shape = PartialShape(dims);
    }
    return ElementSpec(std::move(rows))
        .Batched(options_.drop_remainder && batch_size_ > 0 ? batch_size_
                                                            : PartialShape::kUnknownDim);
  }

  std::string Describe() const override {
    std::string s = absl::StrCat("PaddedBatch(", batch_size_);
    if (!options_.padded_shapes.empty()) {
      absl::StrAppend(&s, ", padded_shapes=(",
                      absl::StrJoin(options_.padded_shapes, ", ",
                                    [](std::string* out, const std::vector<int64_t>& spec) {
                                      out->append(SpecString(spec));
                                    }),
                      ")");
    }
    if (!options_.padding_values.empty()) {
      absl::StrAppend(
          &s, ", padding_values=(",
          absl::StrJoin(options_.padding_values, ", ",
                        [](std::string* out, const Tensor& t) { out->append(t.DebugString()); }),
          ")");
    }
    if (options_.drop_remainder) s += ", drop_remainder";
    return s + ")";
  }

  int64_t batch_size() const { return batch_size_; }
  const PaddedBatchOptions& padded_options() const { return options_; }

 private:
  int64_t batch_size_;
  PaddedBatchOptions options_;
};

class PaddedBatchIterator : public BatchingIterator {
 public:
  PaddedBatchIterator(const PaddedBatchDataset* d, const IteratorContext& ctx,
                      std::unique_ptr<IteratorBase> input)
      : BatchingIterator(d, ctx, std::move(input), d->batch_size(),
                         d->padded_options().drop_remainder),
        d_(d) {}

 private:
  // The padded shape of component `k` for this batch (without the batch
  // dimension), checking that every element fits it.
  absl::StatusOr<Shape> PaddedShape(size_t k) const {
    const PaddedBatchOptions& o = d_->padded_options();
    const Tensor& first = rows_[0][k];
    const std::vector<int64_t>* spec = o.padded_shapes.empty() ? nullptr : &o.padded_shapes[k];
    if (spec != nullptr && static_cast<int>(spec->size()) != first.rank()) {
      return absl::InvalidArgumentError(absl::StrCat("padded_shapes[", k, "] ", SpecString(*spec),
                                                     " has rank ", spec->size(), ", but component ",
                                                     k, " of the batch's first element has shape ",
                                                     first.shape().DebugString()));
    }
    Shape longest = first.shape();
    for (size_t j = 1; j < rows_.size(); ++j) {
      const Tensor& t = rows_[j][k];
      if (t.dtype() != first.dtype()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "element ", j, " of the batch: component ", k, " has dtype ", DTypeName(t.dtype()),
            ", expected ", DTypeName(first.dtype()), " like the batch's first element"));
      }
      if (t.rank() != first.rank()) {
        return absl::InvalidArgumentError(
            absl::StrCat("element ", j, " of the batch: component ", k, " has shape ",
                         t.shape().DebugString(), " of rank ", t.rank(), ", expected rank ",
                         first.rank(), " like the batch's first element"));
      }
      for (int d = 0; d < t.rank(); ++d) longest.set_dim(d, std::max(longest.dim(d), t.dim(d)));
    }
    if (spec == nullptr) return longest;
    Shape padded = longest;
    for (int d = 0; d < first.rank(); ++d) {
      const int64_t fixed = (*spec)[d];
      if (fixed < 0) continue;
      if (longest.dim(d) > fixed) {
        for (size_t j = 0; j < rows_.size(); ++j) {
          const Tensor& t = rows_[j][k];
          if (t.dim(d) > fixed) {
            return absl::InvalidArgumentError(
                absl::StrCat("element ", j, " of the batch: component ", k, " has shape ",
                             t.shape().DebugString(), ", larger than padded_shapes[", k, "] ",
                             SpecString(*spec), " in dimension ", d));
          }
        }
      }
      padded.set_dim(d, fixed);
    }
    return padded;
  }

  absl::StatusOr<Element> MakeBatch() override {
    const PaddedBatchOptions& o = d_->padded_options();
    const int64_t n = static_cast<int64_t>(rows_.size());
    const size_t arity = rows_[0].size();
    for (size_t j = 1; j < rows_.size(); ++j) {
      if (rows_[j].size() != arity) {
        return absl::InvalidArgumentError(absl::StrCat("element ", j, " of the batch has ",
                                                       rows_[j].size(), " components, expected ",
                                                       arity, " like the batch's first element"));
      }
    }
    if (!o.padded_shapes.empty() && o.padded_shapes.size() != arity) {
      return absl::InvalidArgumentError(absl::StrCat("padded_shapes has ", o.padded_shapes.size(),
                                                     " shapes, but the elements have ", arity,
                                                     " components"));
    }
    if (!o.padding_values.empty() && o.padding_values.size() != arity) {
      return absl::InvalidArgumentError(absl::StrCat("padding_values has ", o.padding_values.size(),
                                                     " values, but the elements have ", arity,
                                                     " components"));
    }
    Element out;
    out.reserve(arity);
    for (size_t k = 0; k < arity; ++k) {
      const Tensor* value = o.padding_values.empty() ? nullptr : &o.padding_values[k];
      if (value != nullptr && value->dtype() != rows_[0][k].dtype()) {
        return absl::InvalidArgumentError(
            absl::StrCat("padding_values[", k, "] is ", DTypeName(value->dtype()),
                         ", but component ", k, " is ", DTypeName(rows_[0][k].dtype())));
      }
      SLUICE_ASSIGN_OR_RETURN(Shape padded, PaddedShape(k));
      padded.InsertDim(0, n);
      Tensor batch(rows_[0][k].dtype(), std::move(padded));
      bool all_full = true;  // No row needs padding: skip the fill.
      for (const Element& e : rows_)
        all_full = all_full && e[k].num_elements() * n == batch.num_elements();
      if (!all_full) Fill(value, batch);
      for (int64_t i = 0; i < n; ++i) CopyPadded(rows_[i][k], i, batch);
      out.push_back(std::move(batch));
    }
    return out;
  }

  const PaddedBatchDataset* d_;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> PaddedBatchDataset::MakeIterator(
    const IteratorContext& ctx) const {
  if (batch_size_ <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": batch_size must be > 0, got ", batch_size_));
  }
  for (size_t k = 0; k < options_.padded_shapes.size(); ++k) {
    for (int64_t dim : options_.padded_shapes[k]) {
      if (dim < -1) {
        return absl::InvalidArgumentError(absl::StrCat(name(), ": padded_shapes[", k, "] ",
                                                       SpecString(options_.padded_shapes[k]),
                                                       " has a dimension below -1"));
      }
    }
  }
  for (size_t k = 0; k < options_.padding_values.size(); ++k) {
    if (options_.padding_values[k].rank() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name(), ": padding_values[", k, "] must be a scalar, got shape ",
                       options_.padding_values[k].shape().DebugString()));
    }
  }
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new PaddedBatchIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::PaddedBatch(int64_t batch_size, PaddedBatchOptions options) const {
  return Dataset(std::make_shared<PaddedBatchDataset>(base(), batch_size, std::move(options)));
}

}  // namespace sluice
