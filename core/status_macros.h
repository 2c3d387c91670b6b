#ifndef SLUICE_CORE_STATUS_MACROS_H_
#define SLUICE_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// SLUICE_RETURN_IF_ERROR(expr): returns the status of `expr` from the enclosing
// function when it is not OK.
#define SLUICE_RETURN_IF_ERROR(expr)                                    \
  do {                                                                  \
    ::absl::Status sluice_status_ = ::sluice::internal::ToStatus(expr); \
    if (!sluice_status_.ok()) return sluice_status_;                    \
  } while (0)

// SLUICE_ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (a StatusOr<T>); on error
// returns its status, otherwise moves the value into `lhs`, which may be a
// declaration (`auto x`) or an existing variable.
#define SLUICE_ASSIGN_OR_RETURN(lhs, expr) \
  SLUICE_ASSIGN_OR_RETURN_IMPL_(SLUICE_CONCAT_(sluice_statusor_, __LINE__), lhs, expr)

#define SLUICE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()

#define SLUICE_CONCAT_INNER_(a, b) a##b
#define SLUICE_CONCAT_(a, b) SLUICE_CONCAT_INNER_(a, b)

namespace sluice::internal {
inline const absl::Status& ToStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& ToStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace sluice::internal

#endif  // SLUICE_CORE_STATUS_MACROS_H_
