#ifndef SLUICE_IO_CRASH_POINT_H_
#define SLUICE_IO_CRASH_POINT_H_

namespace sluice {

// Fault injection for crash-consistency tests: the process kills itself with SIGKILL the n-th
// time it reaches the crash point `name`, when the environment variable SLUICE_CRASH_AT is
// "name:n" when the process starts (say "atomic_file_commit:3": inside the third atomic file
// write, after the data is written and synced and before the rename). Without the variable a
// crash point costs one relaxed load. The points: "atomic_file_commit" (io/atomic_file.cc).
// With SLUICE_CRASH_SIGNAL=TERM the process sends itself SIGTERM there instead, and goes on if
// it handles the signal: a scheduler's preemption at an exact moment.
void CrashPoint(const char* name);

}  // namespace sluice

#endif  // SLUICE_IO_CRASH_POINT_H_
