// Wall and CPU time of one in-place MPI_Iallreduce of float32 gradients, as MpiCommunicator issues
// it, under the libnbc algorithm the environment selects. Run it under mpirun, for example:
//   for a in 0 1 2 3 4; do
//     mpirun -np 2 --mca coll_libnbc_iallreduce_algorithm $a build/bench/mpi_allreduce_algorithms
//     13
//   done
// (0: Open MPI's own choice, 1 ring, 2 binomial, 3 reduce-scatter + all-gather, 4 recursive
// doubling). MpiCommunicator chooses the ring for a job of 2 ranks when the parameter is
// unset (distributed/mpi_communicator.cc); this program does not.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

double CpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double megabytes = argc > 1 ? std::atof(argv[1]) : 13.0;  // the cnn's gradients
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  const int count = static_cast<int>(megabytes * 1e6 / sizeof(float));
  std::vector<float> data(count);
  std::vector<double> wall, cpu;
  int wrong = 0;
  for (int r = 0; r < rounds; ++r) {
    std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    const double w0 = MPI_Wtime(), c0 = CpuSeconds();
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    wall.push_back(MPI_Wtime() - w0);
    cpu.push_back(CpuSeconds() - c0);
    // 1 + 2 + ... + size, exact in float32.
    const float want = static_cast<float>(size) * static_cast<float>(size + 1) / 2;
    for (int i = 0; i < count; i += 4099) wrong += data[i] != want;
  }
  if (rank == 0) {
    const char* algorithm = std::getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
    std::printf(
        "%d ranks, %.1f MB in place, libnbc algorithm %s: wall %.2f ms, CPU %.2f ms (medians of "
        "%d)%s\n",
        size, megabytes, algorithm != nullptr ? algorithm : "unset (0)", Median(wall) * 1e3,
        Median(cpu) * 1e3, rounds, wrong > 0 ? ", WRONG SUMS" : "");
  }
  MPI_Finalize();
  return wrong > 0 ? 1 : 0;
}
