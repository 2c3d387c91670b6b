#include "distributed/mpi_communicator.h"

// The C API only: Open MPI's deprecated C++ bindings need a library we do not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/mutex.h"
#include "core/status_context.h"
#include "core/status_macros.h"
#include "train/backend/transfer.h"

namespace sluice::distributed {
// Named, not anonymous: MpiCommunicator::Collective, a class with linkage, holds Arrivals.
namespace mpi_wire {
// The collective a rank has reached, as its peers are told: its number and what it is.
constexpr size_t kArrivalBytes = 128;
struct Arrival {
  int64_t seq = 0;
  char what[kArrivalBytes - sizeof(int64_t)] = {};
};
static_assert(sizeof(Arrival) == kArrivalBytes);
}  // namespace mpi_wire
namespace {

using mpi_wire::Arrival;
using mpi_wire::kArrivalBytes;

// MPI allows one MPI_Init per process.
std::atomic<bool> mpi_claimed{false};

[[noreturn]] void AbortJob(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; in case it does
}

constexpr int kArrivalTag = 1;
// All-reduce packs tensors smaller than this into one buffer; larger ones go as they are.
constexpr int64_t kPackBelowBytes = 256 << 10;

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return absl::StrCat("MPI error ", code);
  return std::string(text, len);
}

// Starts a non-blocking MPI call whose request goes at the end of `requests`:
// Post(requests, "MPI_Ibarrier", [&](MPI_Request* r) { return MPI_Ibarrier(comm, r); }).
template <typename Call>
absl::Status Post(std::vector<MPI_Request>& requests, absl::string_view name, Call call) {
  const int rc = call(&requests.emplace_back());
  if (rc != MPI_SUCCESS) return absl::InternalError(absl::StrCat(name, ": ", MpiError(rc)));
  return absl::OkStatus();
}

// The library's type for a dtype CheckAllReduceTensors accepted (float32, int32 or int64).
MPI_Datatype ReduceType(DType dtype) {
  switch (dtype) {
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    default:
      return MPI_FLOAT;
  }
}

MPI_Op ToMpi(ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      return MPI_SUM;  // kMean divides afterwards
  }
  return MPI_SUM;
}

std::string Megabytes(int64_t bytes) {
  return absl::StrCat(static_cast<double>(static_cast<int64_t>(bytes / 1e4)) / 100, " MB");
}

// Tensors as the worker sees them: host tensors (the caller's own, or host copies of device
// tensors, copied back when the caller waits).
struct HostTensors {
  std::vector<Tensor> originals;
  std::vector<Tensor> host;
  int64_t bytes = 0;
};

absl::StatusOr<HostTensors> OnHost(std::vector<Tensor> tensors) {
  HostTensors out;
  for (Tensor& t : tensors) {
    if (t.dtype() == DType::kBytes) {
      return absl::InvalidArgumentError("collectives do not take bytes tensors");
    }
    SLUICE_ASSIGN_OR_RETURN(Tensor host, train::backend::ToHost(t));
    out.bytes += static_cast<int64_t>(host.num_elements() * DTypeSize(host.dtype()));
    out.host.push_back(std::move(host));
    out.originals.push_back(std::move(t));
  }
  return out;
}

// Copies the results back into the tensors that live on another device.
absl::Status CopyBack(HostTensors& t) {
  for (size_t i = 0; i < t.host.size(); ++i) {
    if (t.host[i].raw_data() != t.originals[i].raw_data() || !t.originals[i].device().is_cpu()) {
      SLUICE_RETURN_IF_ERROR(train::backend::CopyInto(t.host[i], t.originals[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCount(int64_t count, absl::string_view what) {
  if (count > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", count, " elements is more than one MPI call takes (2^31 - 1)"));
  }
  return absl::OkStatus();
}

// Open MPI's non-blocking all-reduce (libnbc) takes a binomial tree for fewer than 4 ranks and
// for in-place buffers, as ours are: one rank reduces the whole message and it allocates a
// message-sized buffer on every call. On 2 ranks of this project's 2-core VM a 13 MB all-reduce
// took 13.4 ms of wall time and 8.7 ms of CPU that way, and 3.6 ms and 3.4 ms with libnbc's ring
// (bench/mpi_allreduce_algorithms.cc). A job of 2 ranks gets the ring unless the user set the
// parameter: it takes as many steps as the tree for a small message, and its sums are a + b on
// both ranks, as the tree's are. From 3 ranks on, the ring adds each segment in another order, so
// the bits would depend on how the buckets cut the gradients, and from 4 on its 2(N-1) steps would
// slow the per-step agreements of a few bytes: those jobs keep Open MPI's choice. The job's size is
// known before MPI_Init only from mpirun's environment.
void PreferRingAllReduceForTwoRanks() {
  constexpr char kParameter[] = "OMPI_MCA_coll_libnbc_iallreduce_algorithm";
  if (std::getenv(kParameter) != nullptr) return;
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  int ranks = 0;
  if (size == nullptr || !absl::SimpleAtoi(size, &ranks) || ranks != 2) return;
  setenv(kParameter, "1", /*overwrite=*/0);  // 1: ring
}

}  // namespace

struct MpiCommunicator::Mpi {
  MPI_Comm comm = MPI_COMM_NULL;     // the collectives
  MPI_Comm arrival = MPI_COMM_NULL;  // the arrival messages beside them
};

struct MpiCommunicator::Job {
  std::string what;  // "AllReduce(mean) of 3 float32 tensors, 1.2 MB"
  // Run in order on the worker. Each posts the requests it started into its argument; the
  // worker waits for them (against the deadline) before the next phase.
  std::vector<std::function<absl::Status(Mpi&, std::vector<MPI_Request>&)>> phases;

  // The worker's result, handed to the caller blocked in Wait.
  void Finish(absl::Status status) {
    MutexLock lock(&mu_);
    status_ = std::move(status);
    done_ = true;
    cv_.SignalAll();
  }
  absl::Status Wait() {
    MutexLock lock(&mu_);
    while (!done_) cv_.Wait(&mu_);
    return status_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

MpiCommunicator::MpiCommunicator(MpiCommunicatorOptions options)
    : options_(options), mpi_(std::make_unique<Mpi>()) {}

absl::StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create(
    MpiCommunicatorOptions options) {
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("MPI: the collective timeout must be positive");
  }
  if (mpi_claimed.exchange(true)) {
    return absl::FailedPreconditionError(
        "MPI: a communicator was already created in this process (MPI initialises once)");
  }
  PreferRingAllReduceForTwoRanks();
  std::unique_ptr<MpiCommunicator> comm(new MpiCommunicator(options));
  comm->worker_ = std::thread([c = comm.get()] { c->Run(); });
  absl::Status init;
  {
    MutexLock lock(&comm->mu_);
    while (!comm->started_) comm->cv_.Wait(&comm->mu_);
    init = comm->init_status_;
  }
  if (!init.ok()) return init;  // the destructor joins the worker
  return comm;
}

MpiCommunicator::~MpiCommunicator() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  if (worker_.joinable()) worker_.join();
  // MPI was not finalized after a failure: what it may still write into lives to the exit.
  if (!abandoned_.empty()) {
    static_cast<void>(new std::vector<std::shared_ptr<Job>>(std::move(abandoned_)));
  }
}

std::string MpiCommunicator::Describe() const {
  return absl::StrCat("MPI rank ", rank_, " of ", size_, " on ", host_);
}

double MpiCommunicator::busy_seconds() const {
  MutexLock lock(&mu_);
  return busy_seconds_;
}

int64_t MpiCommunicator::collectives() const {
  MutexLock lock(&mu_);
  return collectives_;
}

void MpiCommunicator::Run() {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  absl::Status status;
  if (rc != MPI_SUCCESS) {
    status = absl::UnavailableError(absl::StrCat("MPI_Init_thread failed: ", MpiError(rc)));
  } else {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &mpi_->comm);
    MPI_Comm_dup(MPI_COMM_WORLD, &mpi_->arrival);
    MPI_Comm_set_errhandler(mpi_->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(mpi_->arrival, MPI_ERRORS_RETURN);
    MPI_Comm_rank(mpi_->comm, &rank_);
    MPI_Comm_size(mpi_->comm, &size_);
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Get_processor_name(host, &len);
    host_.assign(host, len);
  }
  {
    MutexLock lock(&mu_);
    init_status_ = status;
    started_ = true;
    cv_.SignalAll();
  }
  if (!status.ok()) return;

  while (true) {
    std::shared_ptr<Job> job;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stop_ && abort_code_.load() < 0) cv_.Wait(&mu_);
      if (abort_code_.load() >= 0) AbortJob(abort_code_.load());
      if (queue_.empty()) break;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const absl::Time start = absl::Now();
    absl::Status status = Execute(*job);
    {
      MutexLock lock(&mu_);
      busy_seconds_ += absl::ToDoubleSeconds(absl::Now() - start);
    }
    // Its buffers too (Execute's comment): the job holds the tensors the reduction writes.
    if (!status.ok()) abandoned_.push_back(job);
    job->Finish(std::move(status));
  }
  MutexLock lock(&mu_);
  // After a timeout the peers may never join MPI_Finalize (a collective): leave it to exit.
  if (broken_.ok()) {
    MPI_Comm_free(&mpi_->comm);
    MPI_Comm_free(&mpi_->arrival);
    MPI_Finalize();
  }
}

std::shared_ptr<MpiCommunicator::Job> MpiCommunicator::Submit(std::shared_ptr<Job> job) {
  MutexLock lock(&mu_);
  queue_.push_back(job);
  cv_.Signal();
  return job;
}

absl::Status MpiCommunicator::WaitFor(Job& job) {
  waiting_.fetch_add(1, std::memory_order_relaxed);
  absl::Status status = job.Wait();
  waiting_.fetch_sub(1, std::memory_order_relaxed);
  return status;
}

// One collective as the worker runs it: beside its phases' requests, the arrival messages that
// tell every peer which collective this rank has reached and hear which one each peer has,
// polled against one deadline.
struct MpiCommunicator::Collective {
  Collective(MpiCommunicator& comm, const std::string& job_what, int64_t seq)
      : comm(comm),
        seq(seq),
        what(absl::StrCat(job_what, " (collective #", seq, ", ", comm.Describe(), ")")),
        theirs(comm.size_),
        arrival_recv(comm.size_, MPI_REQUEST_NULL),
        arrived(comm.size_, 0) {
    mine.seq = seq;
    std::strncpy(mine.what, job_what.c_str(), sizeof(mine.what) - 1);
    arrived[comm.rank_] = 1;
  }

  // Sends this rank's arrival to every peer and listens for theirs; the deadline starts here.
  void Announce() {
    for (int p = 0; p < comm.size_; ++p) {
      if (p == comm.rank_) continue;
      MPI_Irecv(&theirs[p], kArrivalBytes, MPI_BYTE, p, kArrivalTag, comm.mpi_->arrival,
                &arrival_recv[p]);
      arrival_send.emplace_back();
      MPI_Isend(&mine, kArrivalBytes, MPI_BYTE, p, kArrivalTag, comm.mpi_->arrival,
                &arrival_send.back());
    }
    deadline = absl::Now() + comm.options_.timeout;
  }

  // Polls `requests` and the arrivals until the requests are done (and, when `all_arrivals`,
  // every arrival too), the deadline passes, or a peer turns out to be at another collective.
  absl::Status Poll(std::vector<MPI_Request>& requests, bool all_arrivals) {
    int idle = 0;
    while (true) {
      int done = 0;
      const int rc = requests.empty() ? MPI_SUCCESS
                                      : MPI_Testall(static_cast<int>(requests.size()),
                                                    requests.data(), &done, MPI_STATUSES_IGNORE);
      if (requests.empty()) done = 1;
      if (rc != MPI_SUCCESS) {
        return comm.Break(absl::InternalError(absl::StrCat(what, ": ", MpiError(rc))));
      }
      SLUICE_ASSIGN_OR_RETURN(const bool all_in, TakeArrivals());
      if (done && (all_in || !all_arrivals)) return absl::OkStatus();
      if (absl::Now() > deadline) return comm.Break(Late());
      if (const int code = comm.abort_code_.load(); code >= 0) AbortJob(code);
      // Spin briefly (a collective on shared memory takes microseconds), then, unless a caller
      // waits, let the training threads have the core.
      if (++idle > 64 && comm.waiting_.load(std::memory_order_relaxed) == 0) usleep(20);
    }
  }

  // Takes the arrivals that came in: whether every peer has arrived, or an error for a peer at
  // another collective.
  absl::StatusOr<bool> TakeArrivals() {
    bool all_in = true;
    for (int p = 0; p < comm.size_; ++p) {
      if (arrived[p]) continue;
      int in = 0;
      MPI_Test(&arrival_recv[p], &in, MPI_STATUS_IGNORE);
      if (!in) {
        all_in = false;
        continue;
      }
      arrived[p] = 1;
      theirs[p].what[sizeof(theirs[p].what) - 1] = '\0';
      if (theirs[p].seq != seq || std::strcmp(theirs[p].what, mine.what) != 0) {
        return comm.Break(absl::InternalError(
            absl::StrCat(what, ": rank ", p, " is at another collective, #", theirs[p].seq, " ",
                         theirs[p].what, ": the ranks run different programs or models")));
      }
    }
    return all_in;
  }

  // Past the deadline: the ranks that never arrived, or that all did and it did not finish.
  absl::Status Late() const {
    std::vector<int> missing;
    for (int p = 0; p < comm.size_; ++p) {
      if (!arrived[p]) missing.push_back(p);
    }
    const absl::Duration timeout = comm.options_.timeout;
    if (missing.empty()) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, ": every rank joined but it did not finish within ", absl::FormatDuration(timeout),
          " (a rank that died after joining, whose exit mpirun reports, or a stalled "
          "network)"));
    }
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": rank", missing.size() > 1 ? "s " : " ", absl::StrJoin(missing, ", "),
                     " did not join it within ", absl::FormatDuration(timeout),
                     " (dead, stalled, or stuck before it)"));
  }

  MpiCommunicator& comm;
  const int64_t seq;
  const std::string what;  // the job, its number and this rank, for errors
  absl::Time deadline = absl::InfiniteFuture();
  Arrival mine;
  std::vector<Arrival> theirs;
  std::vector<MPI_Request> arrival_recv;
  std::vector<MPI_Request> arrival_send;
  std::vector<char> arrived;
};

absl::Status MpiCommunicator::Break(absl::Status status) {
  MutexLock lock(&mu_);
  broken_ = status;
  return status;
}

absl::Status MpiCommunicator::Execute(Job& job) {
  int64_t seq;
  {
    MutexLock lock(&mu_);
    if (!broken_.ok()) {
      return WithContext(broken_,
                         absl::StrCat(job.what, ": the group is broken by an earlier error: "));
    }
    seq = ++collectives_;
  }
  auto collective = std::make_unique<Collective>(*this, job.what, seq);
  absl::Status status = [&]() -> absl::Status {
    collective->Announce();
    std::vector<MPI_Request> requests;
    for (auto& phase : job.phases) {
      requests.clear();
      if (absl::Status s = phase(*mpi_, requests); !s.ok()) return Break(s);
      SLUICE_RETURN_IF_ERROR(collective->Poll(requests, /*all_arrivals=*/false));
    }
    // Every peer's arrival, and this rank's messages delivered.
    return collective->Poll(collective->arrival_send, /*all_arrivals=*/true);
  }();
  // A failed collective may leave receives posted (a late peer's arrival, the reduction itself),
  // which MPI may still complete into their buffers, even inside MPI_Abort: they are never freed
  // (the group is broken, and the process is about to end).
  if (!status.ok()) collective.release();
  return status;
}

absl::StatusOr<PendingCollective> MpiCommunicator::StartAllReduce(std::vector<Tensor> tensors,
                                                                  ReduceOp op) {
  if (tensors.empty()) return PendingCollective();
  SLUICE_ASSIGN_OR_RETURN(const AllReduceShape shape, CheckAllReduceTensors(tensors, op));
  const DType dtype = shape.dtype;
  const MPI_Datatype type = ReduceType(dtype);
  SLUICE_RETURN_IF_ERROR(CheckCount(shape.elements, "all-reduce"));
  auto host = std::make_shared<HostTensors>();
  SLUICE_ASSIGN_OR_RETURN(*host, OnHost(std::move(tensors)));

  auto job = std::make_shared<Job>();
  job->what = absl::StrCat("AllReduce(", ReduceOpName(op), ") of ", host->host.size(), " ",
                           DTypeName(dtype), " tensors, ", Megabytes(host->bytes));
  // Large tensors are reduced in their own memory, one call each; small ones are packed into
  // one buffer, one call, so that a bucket of many biases costs one message, not dozens.
  auto packed = std::make_shared<std::vector<char>>();
  auto packed_members = std::make_shared<std::vector<size_t>>();
  std::vector<size_t> own;
  for (size_t i = 0; i < host->host.size(); ++i) {
    const Tensor& t = host->host[i];
    const int64_t bytes = t.num_elements() * static_cast<int64_t>(DTypeSize(t.dtype()));
    (bytes >= kPackBelowBytes ? own : *packed_members).push_back(i);
  }
  if (packed_members->size() == 1) {
    own.push_back(packed_members->front());
    packed_members->clear();
  }
  const float scale = 1.0f / static_cast<float>(size_);
  job->phases.push_back([=](Mpi& mpi, std::vector<MPI_Request>& requests) {
    auto post = [&](void* data, int64_t n) {
      return Post(requests, "MPI_Iallreduce", [&](MPI_Request* r) {
        return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), type, ToMpi(op), mpi.comm,
                              r);
      });
    };
    if (!packed_members->empty()) {
      int64_t bytes = 0;
      for (size_t i : *packed_members) {
        bytes += host->host[i].num_elements() * static_cast<int64_t>(DTypeSize(dtype));
      }
      packed->resize(bytes);
      char* dst = packed->data();
      for (size_t i : *packed_members) {
        const Tensor& t = host->host[i];
        const size_t n = t.num_elements() * DTypeSize(dtype);
        std::memcpy(dst, t.raw_data(), n);
        dst += n;
      }
      SLUICE_RETURN_IF_ERROR(post(packed->data(), bytes / static_cast<int64_t>(DTypeSize(dtype))));
    }
    for (size_t i : own) {
      SLUICE_RETURN_IF_ERROR(post(host->host[i].raw_data(), host->host[i].num_elements()));
    }
    return absl::OkStatus();
  });
  job->phases.push_back([=](Mpi&, std::vector<MPI_Request>&) {
    const char* src = packed->data();
    for (size_t i : *packed_members) {
      Tensor& t = host->host[i];
      const size_t n = t.num_elements() * DTypeSize(dtype);
      std::memcpy(t.raw_data(), src, n);
      src += n;
    }
    if (op == ReduceOp::kMean) {
      for (Tensor& t : host->host) {
        for (float& v : t.flat<float>()) v *= scale;
      }
    }
    return absl::OkStatus();
  });
  Submit(job);
  return PendingCollective([this, job, host]() -> absl::Status {
    SLUICE_RETURN_IF_ERROR(WaitFor(*job));
    return CopyBack(*host);
  });
}

absl::Status MpiCommunicator::AllReduceHost(void* data, int64_t count, ValueType type,
                                            ReduceOp op) {
  if (op == ReduceOp::kMean && type != ValueType::kFloat64) {
    return absl::InvalidArgumentError("all-reduce (mean) of integers");
  }
  SLUICE_RETURN_IF_ERROR(CheckCount(count, "all-reduce"));
  auto job = std::make_shared<Job>();
  const bool f64 = type == ValueType::kFloat64;
  job->what = absl::StrCat("AllReduce(", ReduceOpName(op), ") of ", count,
                           f64 ? " float64" : " int64", " values");
  job->phases.push_back([=](Mpi& mpi, std::vector<MPI_Request>& requests) {
    return Post(requests, "MPI_Iallreduce", [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count),
                            f64 ? MPI_DOUBLE : MPI_INT64_T, ToMpi(op), mpi.comm, r);
    });
  });
  SLUICE_RETURN_IF_ERROR(WaitFor(*Submit(job)));
  if (op == ReduceOp::kMean) {
    double* d = static_cast<double*>(data);
    for (int64_t i = 0; i < count; ++i) d[i] /= size_;
  }
  return absl::OkStatus();
}

absl::Status MpiCommunicator::Broadcast(std::vector<Tensor> tensors, int root) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast: root ", root, " is not a rank of ", size_));
  }
  auto host = std::make_shared<HostTensors>();
  SLUICE_ASSIGN_OR_RETURN(*host, OnHost(std::move(tensors)));
  for (const Tensor& t : host->host) {
    SLUICE_RETURN_IF_ERROR(
        CheckCount(t.num_elements() * static_cast<int64_t>(DTypeSize(t.dtype())), "broadcast"));
  }
  auto job = std::make_shared<Job>();
  job->what = absl::StrCat("Broadcast from rank ", root, " of ", host->host.size(), " tensors, ",
                           Megabytes(host->bytes));
  job->phases.push_back([=](Mpi& mpi, std::vector<MPI_Request>& requests) {
    for (Tensor& t : host->host) {
      SLUICE_RETURN_IF_ERROR(Post(requests, "MPI_Ibcast", [&](MPI_Request* r) {
        return MPI_Ibcast(t.raw_data(), static_cast<int>(t.num_elements() * DTypeSize(t.dtype())),
                          MPI_BYTE, root, mpi.comm, r);
      }));
    }
    return absl::OkStatus();
  });
  SLUICE_RETURN_IF_ERROR(WaitFor(*Submit(job)));
  if (rank_ == root) return absl::OkStatus();
  return CopyBack(*host);
}

absl::StatusOr<Tensor> MpiCommunicator::AllGather(const Tensor& t) {
  auto host = std::make_shared<HostTensors>();
  SLUICE_ASSIGN_OR_RETURN(*host, OnHost({t}));
  const int64_t bytes = host->bytes;
  SLUICE_RETURN_IF_ERROR(CheckCount(bytes * size_, "all-gather"));
  std::vector<int64_t> dims = {size_};
  for (int64_t d : t.shape().dims()) dims.push_back(d);
  auto out = std::make_shared<Tensor>(t.dtype(), Shape(dims));
  auto job = std::make_shared<Job>();
  job->what = absl::StrCat("AllGather of ", DTypeName(t.dtype()), t.shape().DebugString());
  job->phases.push_back([=](Mpi& mpi, std::vector<MPI_Request>& requests) {
    return Post(requests, "MPI_Iallgather", [&](MPI_Request* r) {
      return MPI_Iallgather(host->host[0].raw_data(), static_cast<int>(bytes), MPI_BYTE,
                            out->raw_data(), static_cast<int>(bytes), MPI_BYTE, mpi.comm, r);
    });
  });
  SLUICE_RETURN_IF_ERROR(WaitFor(*Submit(job)));
  if (t.device().is_cpu()) return *out;
  return train::backend::CopyTo(*out, t.device());
}

absl::StatusOr<std::vector<std::string>> MpiCommunicator::AllGatherBytes(const std::string& bytes) {
  SLUICE_RETURN_IF_ERROR(CheckCount(static_cast<int64_t>(bytes.size()), "all-gather"));
  struct State {
    std::string mine;
    std::vector<int64_t> lengths;
    std::vector<int> counts, displs;
    std::string all;
  };
  auto s = std::make_shared<State>();
  s->mine = bytes;
  s->lengths.assign(size_, 0);
  s->lengths[rank_] = static_cast<int64_t>(bytes.size());
  auto job = std::make_shared<Job>();
  job->what = "AllGather of bytes";
  const int rank = rank_;
  job->phases.push_back([=](Mpi& mpi, std::vector<MPI_Request>& requests) {
    return Post(requests, "MPI_Iallgather", [&](MPI_Request* r) {
      return MPI_Iallgather(MPI_IN_PLACE, 1, MPI_INT64_T, s->lengths.data(), 1, MPI_INT64_T,
                            mpi.comm, r);
    });
  });
  job->phases.push_back([=](Mpi& mpi, std::vector<MPI_Request>& requests) {
    int64_t total = 0;
    for (int64_t n : s->lengths) {
      s->displs.push_back(static_cast<int>(total));
      s->counts.push_back(static_cast<int>(n));
      total += n;
    }
    if (total > INT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("all-gather of ", total, " bytes in all: more than one MPI call takes"));
    }
    s->all.resize(total);
    return Post(requests, "MPI_Iallgatherv", [&](MPI_Request* r) {
      return MPI_Iallgatherv(s->mine.data(), s->counts[rank], MPI_BYTE, s->all.data(),
                             s->counts.data(), s->displs.data(), MPI_BYTE, mpi.comm, r);
    });
  });
  SLUICE_RETURN_IF_ERROR(WaitFor(*Submit(job)));
  std::vector<std::string> out;
  for (int p = 0; p < size_; ++p) out.push_back(s->all.substr(s->displs[p], s->counts[p]));
  return out;
}

absl::Status MpiCommunicator::Barrier() {
  auto job = std::make_shared<Job>();
  job->what = "Barrier";
  job->phases.push_back([](Mpi& mpi, std::vector<MPI_Request>& requests) {
    return Post(requests, "MPI_Ibarrier",
                [&](MPI_Request* r) { return MPI_Ibarrier(mpi.comm, r); });
  });
  return WaitFor(*Submit(job));
}

void MpiCommunicator::Abort(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (std::this_thread::get_id() == worker_.get_id()) AbortJob(exit_code);
  {
    MutexLock lock(&mu_);
    if (!started_ || !init_status_.ok()) std::_Exit(exit_code);  // no MPI to abort
    // MPI runs FUNNELED: the worker makes every MPI call, MPI_Abort too, between two polls of
    // a collective in flight or as soon as it wakes.
    abort_code_.store(exit_code);
    cv_.SignalAll();
  }
  // Should the worker not get there (inside an MPI call that does not return), abort from here:
  // outside MPI's thread rules, but better than a job that waits out its timeouts.
  absl::SleepFor(absl::Seconds(10));
  AbortJob(exit_code);
}

}  // namespace sluice::distributed
