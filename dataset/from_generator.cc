// FromGenerator(make): elements from a user function. `make` is called once
// per iterator (lazily, at the first GetNext or at Restore) and returns that
// iterator's Generator.
//
// Checkpoints save how many times the generator was called; Restore calls
// make() and replays that many calls, dropping their results. The restore is
// exact only if the generator is deterministic (the same sequence of elements
// and errors each time make() is called); a replay that ends early or yields
// a different number of errors is reported as FailedPrecondition.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/dataset_base.h"

namespace sluice {
namespace {

class GeneratorDataset : public DatasetBase {
 public:
  GeneratorDataset(std::function<Generator()> make, ElementSpec output_signature)
      : DatasetBase("FromGenerator", {}), make_(std::move(make)) {
    DeclareOutputSignature(std::move(output_signature));
  }

  absl::StatusOr<std::unique_ptr<IteratorBase>> MakeIterator(
      const IteratorContext& ctx) const override {
    if (!make_) return absl::InvalidArgumentError(absl::StrCat(name(), ": no generator factory"));
    return std::unique_ptr<IteratorBase>(new GeneratorIterator(this, ctx));
  }

 private:
  class GeneratorIterator : public IteratorBase {
   public:
    GeneratorIterator(const GeneratorDataset* d, const IteratorContext& ctx)
        : IteratorBase(d, ctx, NodeKind::kSource), d_(d) {}

   protected:
    absl::StatusOr<std::optional<Element>> GetNextInternal() override {
      if (ended_) return std::nullopt;
      SLUICE_RETURN_IF_ERROR(EnsureGenerator());
      absl::StatusOr<std::optional<Element>> next = generator_();
      ++calls_;
      if (!next.ok()) {
        ++errors_;
        return next.status();
      }
      if (!next->has_value()) {
        ended_ = true;
        generator_ = nullptr;  // Release what it holds.
      }
      return next;
    }

    absl::Status SaveInternal(proto::IteratorStateProto* state) override {
      (*state->mutable_ints())["calls"] = calls_;
      (*state->mutable_ints())["errors"] = errors_;
      (*state->mutable_ints())["ended"] = ended_;
      return absl::OkStatus();
    }

    absl::Status RestoreInternal(const proto::IteratorStateProto& state) override {
      SLUICE_ASSIGN_OR_RETURN(int64_t calls, SavedInt(state, "calls"));
      SLUICE_ASSIGN_OR_RETURN(int64_t errors, SavedInt(state, "errors"));
      SLUICE_ASSIGN_OR_RETURN(int64_t ended, SavedInt(state, "ended"));
      if (ended != 0) {
        calls_ = calls;
        errors_ = errors;
        ended_ = true;
        return absl::OkStatus();
      }
      SLUICE_RETURN_IF_ERROR(EnsureGenerator());
      int64_t replay_errors = 0;
      for (int64_t i = 0; i < calls; ++i) {
        absl::StatusOr<std::optional<Element>> next = generator_();
        if (!next.ok()) {
          ++replay_errors;
        } else if (!next->has_value()) {
          return NotDeterministic(calls, absl::StrCat("it ended after ", i, " calls"));
        }
      }
      if (replay_errors != errors) {
        return NotDeterministic(calls, absl::StrCat("its first ", calls, " calls returned ",
                                                    replay_errors, " errors, not ", errors));
      }
      calls_ = calls;
      errors_ = errors;
      return absl::OkStatus();
    }

   private:
    absl::Status EnsureGenerator() {
      if (generator_) return absl::OkStatus();
      generator_ = d_->make_();
      if (!generator_) {
        return absl::InvalidArgumentError(
            absl::StrCat(d_->name(), ": the factory returned an empty generator"));
      }
      return absl::OkStatus();
    }

    absl::Status NotDeterministic(int64_t calls, absl::string_view what) const {
      return absl::FailedPreconditionError(
          absl::StrCat(d_->name(), ": cannot restore the checkpoint by replaying ", calls,
                       " generator calls: ", what, " (the generator must be deterministic)"));
    }

    const GeneratorDataset* d_;
    Generator generator_;
    int64_t calls_ = 0;   // generator calls that returned an element or an error
    int64_t errors_ = 0;  // of those, errors
    bool ended_ = false;
  };

  std::function<Generator()> make_;
};

}  // namespace

Dataset Dataset::FromGenerator(std::function<Generator()> make, ElementSpec output_signature) {
  return Dataset(std::make_shared<GeneratorDataset>(std::move(make), std::move(output_signature)));
}

}  // namespace sluice
