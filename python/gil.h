#ifndef SLUICE_PYTHON_GIL_H_
#define SLUICE_PYTHON_GIL_H_

#include <Python.h>

// The GIL as the pipeline's threads take it, and interpreter exit. Pipeline threads call Python
// (map functions, the release of function objects) and Python threads wait for C++ work without
// the GIL; at exit (an atexit handler, before the interpreter finalizes) both must stop taking
// it: a thread that asks for the GIL while the interpreter finalizes is ended by Python with
// pthread_exit, whose unwinding through C++ code that cannot be unwound (a noexcept destructor)
// is std::terminate.
namespace sluice::python {

// A pipeline thread's Python call: false once exit began (the call is then not made: a map
// function's element is Cancelled, a function object is leaked), else counted until
// LeavePython, which the caller must call.
bool EnterPython();
void LeavePython();

// Whether the interpreter is finalizing (Python 3.13 made _Py_IsFinalizing public).
bool IsFinalizing();

// Counts this thread's pipeline Python calls while it makes one (a map function, or the release
// of one): InPipelinePythonCall. The cyclic GC may run there and destroy an iterator of that
// same pipeline, whose close, joining the pipeline's threads, would then wait for itself.
class PipelinePythonCall {
 public:
  PipelinePythonCall();
  ~PipelinePythonCall();
  PipelinePythonCall(const PipelinePythonCall&) = delete;
  PipelinePythonCall& operator=(const PipelinePythonCall&) = delete;
};
bool InPipelinePythonCall();

// How many fork()s this process is from the one that loaded the module: a child's threads are not
// its parent's, so what the parent's threads held (an iterator's pipeline) cannot be joined there.
int ForkGeneration();

// Exit begins: from now on EnterPython refuses, and threads other than this one that would take
// the GIL (ReleaseGil, AcquireGil) wait for the process to end instead. Such a thread is a daemon
// thread or a pipeline's (Python joins its other threads before exit); Python 3.14 parks such
// threads so itself.
void StopPythonCalls();
// Waits, without the GIL (release it first), until no pipeline thread is in a Python call, no
// thread is taking the GIL back and no exit hold (HoldExit) is left.
void WaitForPythonCalls();
// Keeps WaitForPythonCalls waiting until ReleaseExitHold: for C++ work that another thread
// finishes on behalf of Python (an iterator closed later, off the thread that dropped it).
void HoldExit();
void ReleaseExitHold();

// Called with the GIL by a thread about to raise because exit closed what it used (an iterator):
// once exit began on another thread, and this one is not inside a pipeline's Python call, it
// releases the GIL and waits for the process to end instead, as ReleaseGil's threads do. Such a
// thread is a daemon thread, and the traceback of an error raised there while the interpreter
// finalizes can abort it ("could not acquire lock for <_io.BufferedWriter name='<stderr>'> at
// interpreter shutdown"). Returns otherwise.
void ParkIfExitingElsewhere();

// py::gil_scoped_release, except that once exit began, a thread other than the exiting one does
// not take the GIL back (StopPythonCalls).
class ReleaseGil {
 public:
  ReleaseGil();
  ~ReleaseGil();
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* state_;
};

// py::gil_scoped_acquire for a thread that released the GIL (ReleaseGil) and needs it a moment,
// with the same rule at exit.
class AcquireGil {
 public:
  AcquireGil();
  ~AcquireGil();
  AcquireGil(const AcquireGil&) = delete;
  AcquireGil& operator=(const AcquireGil&) = delete;

 private:
  PyGILState_STATE state_;
};

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_GIL_H_
