// The process's one MPI communicator for distributed_tests, which CTest runs under mpirun (a
// single process without it: tests that need peers then skip, saying so).
#ifndef SLUICE_TESTS_DISTRIBUTED_TEST_COMMUNICATOR_H_
#define SLUICE_TESTS_DISTRIBUTED_TEST_COMMUNICATOR_H_

#include <cstdlib>
#include <memory>

#include "absl/time/time.h"
#include "distributed/mpi_communicator.h"
#include "gtest/gtest.h"

namespace sluice::distributed::testing {

// Collectives time out after SLUICE_TEST_COLLECTIVE_TIMEOUT seconds (default 120).
inline MpiCommunicator& TestComm() {
  static MpiCommunicator* comm = [] {
    MpiCommunicatorOptions options;
    if (const char* t = std::getenv("SLUICE_TEST_COLLECTIVE_TIMEOUT")) {
      options.timeout = absl::Seconds(std::atoi(t));
    }
    absl::StatusOr<std::unique_ptr<MpiCommunicator>> c = MpiCommunicator::Create(options);
    if (!c.ok()) {
      std::fprintf(stderr, "cannot start MPI: %s\n", c.status().ToString().c_str());
      std::abort();
    }
    // Leaked on purpose: MPI_Finalize must come after every test, at exit.
    static std::unique_ptr<MpiCommunicator> owner = std::move(*c);
    return owner.get();
  }();
  return *comm;
}

}  // namespace sluice::distributed::testing

// Skips a test that needs peers when the suite runs as one process.
#define SLUICE_REQUIRE_RANKS(n)                                                               \
  do {                                                                                        \
    if (::sluice::distributed::testing::TestComm().size() < (n)) {                            \
      GTEST_SKIP() << "needs " << (n) << " ranks, run under mpirun (ctest runs it that way)"; \
    }                                                                                         \
  } while (0)

#endif  // SLUICE_TESTS_DISTRIBUTED_TEST_COMMUNICATOR_H_
