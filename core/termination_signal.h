#ifndef SLUICE_CORE_TERMINATION_SIGNAL_H_
#define SLUICE_CORE_TERMINATION_SIGNAL_H_

#include <memory>

#include "absl/status/statusor.h"

namespace sluice {

// Notes the arrival of SIGTERM, the signal schedulers send a job before they kill it (Kubernetes'
// and Slurm's preemption, a spot VM's shutdown), so that training can write a backup in the grace
// period instead of dying at once. While a TerminationSignal lives, the first SIGTERM only sets
// its flag; a second one gets the disposition the process had before (by default: death), so a
// job that does not stop can still be ended. One at a time per process; the destructor restores
// the previous disposition.
class TerminationSignal {
 public:
  // FailedPrecondition while another one lives. With `keep_received`, a SIGTERM that the previous
  // watch received and no one acted on (it came after the last look) counts as received by this
  // one, which then installs no handler: that SIGTERM was the one let through, so the next one
  // gets the previous disposition.
  static absl::StatusOr<std::unique_ptr<TerminationSignal>> Install(bool keep_received = false);
  ~TerminationSignal();
  TerminationSignal(const TerminationSignal&) = delete;
  TerminationSignal& operator=(const TerminationSignal&) = delete;

  // Whether SIGTERM arrived since Install (or before it, with keep_received).
  bool received() const;

  // Ends the watch and says whether SIGTERM arrived: the previous disposition comes back first, so
  // a SIGTERM after this call gets it and one before is counted, where a look at received()
  // before the end of the watch could miss one noted after it. (One whose handler is still
  // running on another thread as this returns can be noted just after: a few instructions.) The
  // destructor then does nothing.
  bool Release();

  // The SIGTERM received has been acted on (a backup written and the run stopped): a later watch
  // with keep_received starts without it. One not acted on stays for such a watch: a SIGTERM
  // after a Fit's last look carries into the next Fit's watch.
  void Consume();

 private:
  explicit TerminationSignal(bool handling) : handling_(handling) {}
  bool handling_;  // this watch installed the handler
  bool released_ = false;
};

}  // namespace sluice

#endif  // SLUICE_CORE_TERMINATION_SIGNAL_H_
