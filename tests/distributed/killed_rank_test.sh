#!/usr/bin/env bash
# A rank killed mid-epoch: the survivor's Fit fails within the collective timeout (5 s here),
# naming the dead rank, instead of waiting forever. --enable-recovery keeps mpirun from killing
# the survivor itself when rank 1 dies, so that the survivor's own error is what is checked.
# Usage: killed_rank_test.sh MPIEXEC DISTRIBUTED_TESTS
set -uo pipefail
mpiexec=$1 tests=$2
result=$(mktemp)
trap 'rm -f "$result"' EXIT
start=$SECONDS
SLUICE_TEST_KILL_RESULT=$result SLUICE_TEST_COLLECTIVE_TIMEOUT=5 \
  timeout 120 "$mpiexec" --enable-recovery -np 2 "$tests" \
  --gtest_filter='DistributedFailureTest.*' >"$result.log" 2>&1
echo "mpirun exited with $? after $((SECONDS - start)) s"
echo "--- rank 0 saw:"
cat "$result"
fail() { echo "FAILED: $*"; echo "--- mpirun's output:"; cat "$result.log"; rm -f "$result.log"; exit 1; }
grep -q 'DEADLINE_EXCEEDED' "$result" || fail "no deadline error on rank 0"
grep -q 'rank 1 did not join it within 5s' "$result" || fail "the error does not name rank 1"
seconds=$(sed -n 's/^seconds \([0-9]*\).*/\1/p' "$result")
[ -n "$seconds" ] && [ "$seconds" -lt 30 ] || fail "rank 0 took ${seconds:-?} s (timeout 5 s)"
rm -f "$result.log"
echo "PASSED: rank 0 failed after $seconds s, naming rank 1"

# Abort on a rank's main thread while its communicator's thread polls a collective: MPI runs
# FUNNELED, so the worker makes the MPI_Abort call, and every rank ends with the code.
start=$SECONDS
SLUICE_TEST_ABORT=1 SLUICE_TEST_COLLECTIVE_TIMEOUT=100 timeout 100 "$mpiexec" -np 2 "$tests" \
  --gtest_filter='DistributedFailureTest.AbortDuringACollectiveEndsEveryRank' >"$result.log" 2>&1
rc=$?
echo "mpirun exited with $rc after $((SECONDS - start)) s"
[ "$rc" = 7 ] || fail "mpirun exited with $rc, not rank 1's abort code 7"
grep -q 'outlived' "$result.log" && fail "rank 0 outlived the abort"
rm -f "$result.log"
echo "PASSED: the abort ended both ranks with code 7"
