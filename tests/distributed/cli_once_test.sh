#!/usr/bin/env bash
# `sluice train --distributed` under mpirun says what concerns the whole job once, from rank 0:
# here the warning of more threads than cores (each rank printed it before). The run then fails
# on its missing data, which is all this needs.
# Usage: cli_once_test.sh MPIEXEC SLUICE
set -uo pipefail
mpiexec=$1 sluice=$2
err=$(mktemp)
trap 'rm -f "$err"' EXIT
timeout 120 "$mpiexec" -np 2 "$sluice" train --distributed --data /nonexistent-sluice-dir \
  --threads 4096 >/dev/null 2>"$err"
echo "mpirun exited with $?"
n=$(grep -c 'warning: --threads 4096 is more than the' "$err")
if [ "$n" != 1 ]; then
  echo "FAILED: the warning was printed $n times, not once; stderr:"
  cat "$err"
  exit 1
fi
echo "PASSED: the warning was printed once"
