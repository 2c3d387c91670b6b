#ifndef SLUICE_DATASET_WRITE_THROUGH_H_
#define SLUICE_DATASET_WRITE_THROUGH_H_

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/element.h"
#include "dataset/dataset_base.h"

namespace sluice::internal {

// The writing side of an op that records its input while passing it on (Cache in a file,
// Snapshot). The writer is made when the first element is asked for; each element is appended,
// the end of the input finishes the recording, and an input error abandons it (a pass with an
// error is no faithful copy). Recording is an optimisation: a writer that fails is reported to
// `on_failure` (a warning) and the pass goes on without it.
//
// Writer has absl::Status Append(const Element&) and a Finish() returning a Status or StatusOr.
template <typename Writer>
class WriteThrough {
 public:
  using MakeWriter = std::function<absl::StatusOr<std::unique_ptr<Writer>>()>;
  using OnFailure = std::function<void(const absl::Status&)>;

  WriteThrough(MakeWriter make, OnFailure on_failure, bool may_write)
      : make_(std::move(make)), on_failure_(std::move(on_failure)) {
    Reset(may_write);
  }

  // Drops any recording under way; the next pass writes only if `may_write`.
  void Reset(bool may_write) {
    writer_.reset();
    state_ = may_write ? State::kNotStarted : State::kOff;
  }

  // The next result of `input`, recorded.
  absl::StatusOr<std::optional<Element>> Pass(IteratorBase& input) {
    if (state_ == State::kNotStarted) {
      absl::StatusOr<std::unique_ptr<Writer>> made = make_();
      if (made.ok()) {
        writer_ = std::move(*made);
        state_ = State::kWriting;
      } else {
        Fail(made.status());
      }
    }
    absl::StatusOr<std::optional<Element>> in = input.GetNext();
    if (!in.ok()) {
      Reset(false);
      return in;
    }
    if (writer_ == nullptr) return in;
    if (!in->has_value()) {
      absl::Status finished = StatusOf(writer_->Finish());
      if (!finished.ok()) Fail(finished);
      Reset(false);
      return in;
    }
    absl::Status appended = writer_->Append(**in);
    if (!appended.ok()) Fail(appended);
    return in;
  }

 private:
  enum class State { kNotStarted, kWriting, kOff };

  static absl::Status StatusOf(const absl::Status& s) { return s; }
  template <typename T>
  static absl::Status StatusOf(const absl::StatusOr<T>& s) {
    return s.status();
  }

  void Fail(const absl::Status& why) {
    on_failure_(why);
    Reset(false);
  }

  MakeWriter make_;
  OnFailure on_failure_;
  std::unique_ptr<Writer> writer_;
  State state_ = State::kOff;
};

}  // namespace sluice::internal

#endif  // SLUICE_DATASET_WRITE_THROUGH_H_
