// Unbatch(): splits each input element along its first dimension into that
// many elements. The outputs are zero-copy views (SubTensor) of the input's
// buffers; every component must have the same first dimension.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class UnbatchDataset : public DatasetBase {
 public:
  explicit UnbatchDataset(std::shared_ptr<const DatasetBase> input)
      : DatasetBase("Unbatch", {std::move(input)}) {}

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override;

  ElementSpec ComputeElementSpec() const override {
    return inputs()[0]->element_spec().Unbatched();
  }

  // Without static shapes the rows per element are known only when iterating.
  int64_t Cardinality() const override {
    const int64_t n = inputs()[0]->Cardinality();
    return n == 0 || n == kInfiniteCardinality ? n : kUnknownCardinality;
  }
};

class UnbatchIterator : public IteratorBase {
 public:
  UnbatchIterator(const UnbatchDataset* d, const IteratorContext& ctx,
                  std::unique_ptr<IteratorBase> input)
      : IteratorBase(d, ctx, NodeKind::kSync), input_(std::move(input)) {}

 protected:
  absl::StatusOr<std::optional<Element>> GetNextInternal() override {
    while (next_row_ >= rows_) {
      if (ended_) return std::nullopt;
      absl::StatusOr<std::optional<Element>> in = input_->GetNext();
      if (!in.ok()) return in.status();
      if (!in->has_value()) {
        ended_ = true;
        current_.clear();
        return std::nullopt;
      }
      const int64_t index = input_index_++;
      current_.clear();
      next_row_ = rows_ = 0;
      SLUICE_ASSIGN_OR_RETURN(rows_, Rows(**in, index));
      current_ = std::move(**in);
    }
    Element out;
    out.reserve(current_.size());
    for (const Tensor& t : current_) {
      SLUICE_ASSIGN_OR_RETURN(Tensor row, t.SubTensor(next_row_));
      out.push_back(std::move(row));
    }
    ++next_row_;
    return std::optional<Element>(std::move(out));
  }

  absl::Status SaveInternal(proto::IteratorStateProto* state) override {
    auto& ints = *state->mutable_ints();
    ints["ended"] = ended_;
    ints["input_index"] = input_index_;
    // Only the rows still to come, so a checkpoint holds no more than needed.
    ints["has_current"] = next_row_ < rows_;
    if (next_row_ < rows_) {
      Element rest;
      for (const Tensor& t : current_) {
        SLUICE_ASSIGN_OR_RETURN(Tensor slice, t.Slice(next_row_, rows_));
        rest.push_back(std::move(slice));
      }
      ElementToProto(rest, state->add_buffer()->mutable_element());
    }
    return SaveInput(input_.get(), state);
  }

  absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
    SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "ended"));
    SLUICE_ASSIGN_OR_RETURN(input_index_, SavedInt(state, "input_index"));
    SLUICE_ASSIGN_OR_RETURN(int64_t has_current, SavedInt(state, "has_current"));
    ended_ = ended != 0;
    current_.clear();
    next_row_ = rows_ = 0;
    if (has_current != 0) {
      if (state.buffer_size() != 1) {
        return absl::DataLossError(
            absl::StrCat("checkpoint of ", state.node(), " lacks the rest of its current element"));
      }
      // What is left of an input element: its rows from the next one on.
      SLUICE_ASSIGN_OR_RETURN(
          current_, RestoreElement(state.buffer(0).element(),
                                   dataset()->element_spec().Batched(PartialShape::kUnknownDim)));
      SLUICE_ASSIGN_OR_RETURN(rows_, Rows(current_, input_index_ - 1));
    }
    return RestoreInput(input_.get(), state);
  }

 private:
  // The common first dimension of the components of input element `index`.
  static absl::StatusOr<int64_t> Rows(const Element& e, int64_t index) {
    if (e.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input element ", index, " has no components to unbatch"));
    }
    for (size_t k = 0; k < e.size(); ++k) {
      if (e[k].rank() == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("input element ", index, ": component ", k,
                         " is a scalar, it has no first dimension to unbatch"));
      }
      if (e[k].dim(0) != e[0].dim(0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input element ", index, ": component ", k, " has shape ", e[k].shape().DebugString(),
            " but component 0 has ", e[0].shape().DebugString(),
            ": components must agree on the first dimension"));
      }
    }
    return e[0].dim(0);
  }

  std::unique_ptr<IteratorBase> input_;
  Element current_;          // the input element being split
  int64_t rows_ = 0;         // its first dimension
  int64_t next_row_ = 0;     // the next row to return
  int64_t input_index_ = 0;  // input elements read (for error messages)
  bool ended_ = false;
};

absl::StatusOr<std::unique_ptr<IteratorBase>> UnbatchDataset::MakeIterator(
    const IteratorContext& ctx) const {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<IteratorBase> input, inputs()[0]->MakeIterator(ctx));
  return std::unique_ptr<IteratorBase>(new UnbatchIterator(this, ctx, std::move(input)));
}

}  // namespace

Dataset Dataset::Unbatch() const { return Dataset(std::make_shared<UnbatchDataset>(base())); }

}  // namespace sluice
