#include "python/gil.h"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "core/mutex.h"

namespace sluice::python {
namespace {

// The pipeline threads' Python calls (and releases of Python objects), counted, so that
// interpreter exit can stop new ones and wait for those running.
struct PythonCalls {
  Mutex mu;
  CondVar done;
  CondVar never;  // what a thread parked at exit waits on
  bool stopped ABSL_GUARDED_BY(mu) = false;
  std::thread::id exiting ABSL_GUARDED_BY(mu);  // the thread that called StopPythonCalls
  int64_t running ABSL_GUARDED_BY(mu) = 0;
  int64_t taking ABSL_GUARDED_BY(mu) = 0;  // threads taking the GIL (ReleaseGil, AcquireGil)
  int64_t held ABSL_GUARDED_BY(mu) = 0;    // HoldExit
};

// Never destroyed: used until the process ends. A child made by fork gets a fresh one (the
// parent's counts and lock state are its threads', which the child does not have).
PythonCalls* calls = new PythonCalls;
std::atomic<int> fork_generation{0};

PythonCalls& Calls() { return *calls; }

void AfterForkInChild() {
  calls = new PythonCalls;  // the parent's is leaked: its mutex may be held by a thread now gone
  fork_generation.fetch_add(1, std::memory_order_relaxed);
}

[[maybe_unused]] const int registered = pthread_atfork(nullptr, nullptr, AfterForkInChild);

thread_local int python_call_depth = 0;

// Whether this thread waits for the process to end rather than take the GIL: exit began on another
// thread, and this one is not inside a pipeline's Python call (counted already: the exit waits for
// it to end, with the GIL released, and the pipeline's close joins it).
bool ParksAtExit(PythonCalls& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(c.mu) {
  return c.stopped && std::this_thread::get_id() != c.exiting && python_call_depth == 0;
}

// Before a thread takes the GIL back: parks it for good where ParksAtExit says so; else counts it,
// so that WaitForPythonCalls waits until it holds the GIL (before the interpreter finalizes).
// DoneTaking ends the count.
void StartTaking() {
  PythonCalls& c = Calls();
  MutexLock l(&c.mu);
  while (ParksAtExit(c)) c.never.Wait(&c.mu);
  ++c.taking;
}

void DoneTaking() {
  PythonCalls& c = Calls();
  {
    MutexLock l(&c.mu);
    --c.taking;
  }
  c.done.SignalAll();
}

}  // namespace

bool EnterPython() {
  PythonCalls& c = Calls();
  MutexLock l(&c.mu);
  if (c.stopped) return false;
  ++c.running;
  return true;
}

void LeavePython() {
  PythonCalls& c = Calls();
  {
    MutexLock l(&c.mu);
    --c.running;
  }
  c.done.SignalAll();
}

bool IsFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

PipelinePythonCall::PipelinePythonCall() { ++python_call_depth; }
PipelinePythonCall::~PipelinePythonCall() { --python_call_depth; }
bool InPipelinePythonCall() { return python_call_depth > 0; }

int ForkGeneration() { return fork_generation.load(std::memory_order_relaxed); }

void StopPythonCalls() {
  PythonCalls& c = Calls();
  MutexLock l(&c.mu);
  c.stopped = true;
  c.exiting = std::this_thread::get_id();
}

void WaitForPythonCalls() {
  PythonCalls& c = Calls();
  MutexLock l(&c.mu);
  while (c.running > 0 || c.taking > 0 || c.held > 0) c.done.Wait(&c.mu);
}

void HoldExit() {
  PythonCalls& c = Calls();
  MutexLock l(&c.mu);
  ++c.held;
}

void ReleaseExitHold() {
  PythonCalls& c = Calls();
  {
    MutexLock l(&c.mu);
    --c.held;
  }
  c.done.SignalAll();
}

void ParkIfExitingElsewhere() {
  {
    PythonCalls& c = Calls();
    MutexLock l(&c.mu);
    if (!ParksAtExit(c)) return;
  }
  PyEval_SaveThread();
  StartTaking();  // parks for good: exit never ends once begun
}

ReleaseGil::ReleaseGil() : state_(PyEval_SaveThread()) {}

ReleaseGil::~ReleaseGil() {
  StartTaking();
  PyEval_RestoreThread(state_);
  DoneTaking();
}

AcquireGil::AcquireGil() {
  StartTaking();
  state_ = PyGILState_Ensure();
  DoneTaking();
}

AcquireGil::~AcquireGil() { PyGILState_Release(state_); }

}  // namespace sluice::python
