// A TEST DEVICE, not a product backend: memory the host may not touch.
//
// The training core must run on a GPU that most test machines lack. A CUDA tensor's
// pointer dereferenced on the host crashes; a host copy of a device tensor taken where the code
// forgot an explicit copy is a silent bug on a GPU. This backend makes both visible on any
// machine: a Device::Guarded(i) tensor lives in pages of its own (one mmap per allocation) kept
// PROT_NONE except while one of this backend's kernels runs on them. Any code above the Backend
// interface that reads or writes device memory itself then dies with SIGSEGV at that line.
//
// The kernels are the CPU backend's, run on host views of the opened pages, so a model trained
// here must equal the CPU run bit for bit. Like the CUDA backend, every kernel refuses operands
// that are not on its device (only Copy takes the host). CopyAsync runs on a copy thread of its
// own, as a GPU's copy engine runs beside its kernels, and a kernel that reads its destination
// before Backend::WaitEvent dies, so prefetching to the device is tested here too. It captures
// device graphs as CUDA does (a launch runs the captured calls again), so traced steps replay
// here as they would on a GPU. The tests that
// use it have "Guarded" in their names: `ctest -R Guarded` runs them all.
#ifndef SLUICE_TESTS_TRAIN_BACKEND_GUARDED_BACKEND_H_
#define SLUICE_TESTS_TRAIN_BACKEND_GUARDED_BACKEND_H_

#include <cstdint>

namespace sluice::train::testing {

// Registers the guarded backend for DeviceType::kGuarded (every index); idempotent. Call before
// using Device::Guarded tensors.
void RegisterGuardedBackend();

// How many guarded allocations are alive, and how many kernels have run, over every index:
// tests check that work really ran on the device.
int64_t GuardedLiveAllocations();
int64_t GuardedKernelCalls();
// CopyAsync calls done on the backend's copy thread.
int64_t GuardedAsyncCopies();
// Copies from the device to the host: each would wait for the GPU's queued work.
int64_t GuardedHostReads();
// RecordEvent calls, and waits for the events they returned.
int64_t GuardedRecordedEvents();
int64_t GuardedEventWaits();
// Device graphs captured, and their launches. The guarded backend captures graphs as CUDA does
// (Backend::Capture), so a traced step's replays here launch graphs; a launch refuses the host
// work a CUDA graph could not hold (a host copy, a Dropout, Synchronize).
int64_t GuardedGraphsCaptured();
int64_t GuardedGraphLaunches();
// The next `n` captures fail, as a CUDA capture does when a call breaks it.
void FailGuardedCaptures(int n);

}  // namespace sluice::train::testing

#endif  // SLUICE_TESTS_TRAIN_BACKEND_GUARDED_BACKEND_H_
