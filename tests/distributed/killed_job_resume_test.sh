#!/usr/bin/env bash
# A 2-rank `sluice train --distributed --backup-dir` job killed as a whole (SIGKILL to mpirun and
# every rank, as a scheduler preempts it) at random moments while it trains, then started again
# with the same command (which resumes from the newest backup), ends with the same test loss and
# weights file, byte for byte, as a job never interrupted (issue 46).
# Usage: killed_job_resume_test.sh MPIEXEC SLUICE
set -uo pipefail
mpiexec=$1 sluice=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$sluice" convert fashion-mnist --out "$work/data" --shards 8 >/dev/null || fail "convert"
rm -f "$work"/data/test-0000[1-7]-of-00008.tfrecord  # 1,250 test images: short evaluations
common=(train --distributed --data "$work/data" --model cnn --limit 1024 --batch 16 --epochs 2
        --seed 3 --json)
# session_pids SID: the live (not zombie) processes of session SID. mpirun puts each rank in a process group of its
# own, so a kill of mpirun's group leaves the ranks running for a while (writing and deleting
# backups under the next job); a preemption kills the whole session.
# Builtins only, so that the kill lands within milliseconds of its moment at any load.
session_pids() {
  local sid=$1 f line fields
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    read -r -a fields <<<"${line##*) }"  # state ppid pgrp session ...
    if [ "${fields[3]}" = "$sid" ] && [ "${fields[0]}" != Z ]; then
      f=${f%/stat}
      echo "${f#/proc/}"
    fi
  done
}
# kill_job: SIGKILL to every process of the job's session, then waits until none is left.
kill_job() {
  local left
  kill -KILL $(session_pids "$pid") 2>/dev/null
  wait "$pid" 2>/dev/null
  for _ in $(seq 1 500); do
    left=$(session_pids "$pid")
    [ -z "$left" ] && return
    kill -KILL $left 2>/dev/null
    sleep 0.01
  done
  fail "processes of the killed job are still running: $left"
}
pid=
job() {  # job OUT_JSON [ARGS...]: starts the job in a session of its own (so that a kill reaches
  # every rank), its mpirun's pid in $pid
  local out=$1
  shift
  setsid "$mpiexec" -np 2 "$sluice" "${common[@]}" "$@" >"$out" 2>"$out.err" &
  pid=$!
}

job "$work/straight.json" --save "$work/straight"
wait "$pid" || fail "the reference job: $(cat "$work/straight.json.err")"
# 1,024 records over 2 ranks at 16 each: 32 steps an epoch, 64 in all; a backup every 2 steps.
steps=64
step_s=$(grep -o '"train_seconds": [0-9.e-]*' "$work/straight.json" | awk -v n=$steps '{print $2 / n}')
[ -n "$step_s" ] || fail "the reference job printed no train_seconds"
echo "the reference job: ${step_s} s a step, $(grep -o '"test_loss": [^,]*' "$work/straight.json")"

# newest_backup: the highest step of the backups there, or 0 (no subprocesses: it is polled).
newest_backup() {
  local f n max=0
  for f in "$work"/backups/ckpt-*.ckpt; do
    [ -e "$f" ] || continue
    n=${f##*/ckpt-}
    n=$((10#${n%.ckpt}))
    [ "$n" -gt "$max" ] && max=$n
  done
  echo "$max"
}

kills=0
for attempt in $(seq 1 40); do
  [ "$kills" -ge 5 ] && break
  # The job resumes from the newest backup. Its kill comes after a random later backup step with
  # at least 4 steps still to run after it (none when it resumes too late for one: it then runs
  # to its end, deletes its backups, and the next job starts afresh), then a random moment within
  # one step: the kill mostly lands while the job trains (or writes its next backup). Under load
  # the polling here can lag past the end of training; such a kill is not counted (below).
  resume=$(newest_backup)
  target=0
  [ "$resume" -lt $((steps - 4)) ] && target=$((resume + 2 * (1 + RANDOM % ((steps - 4 - resume) / 2))))
  job "$work/run.json" --backup-dir "$work/backups" --checkpoint-every 2 --save "$work/model"
  if [ "$target" = 0 ]; then
    wait "$pid" || fail "a job failed: $(cat "$work/run.json.err")"
    continue
  fi
  while kill -0 "$pid" 2>/dev/null && [ "$(newest_backup)" -lt "$target" ]; do
    sleep 0.005
  done
  delay=$(awk -v s="$RANDOM" -v t="$step_s" 'BEGIN { srand(s); printf "%.3f", rand() * t }')
  sleep "$delay"
  if kill -0 "$pid" 2>/dev/null; then
    kill_job
    left=$(ls "$work/backups" 2>/dev/null | grep -c '^ckpt-.*\.ckpt$')
    # Backups are only deleted by rotation, after a newer one is in place, and at the end of
    # training: none left means the kill came after training (evaluating, saving), which is not
    # the case under test; the next job starts afresh.
    if [ "$left" = 0 ]; then
      echo "killed the job after its training ended (backups deleted): not counted"
      continue
    fi
    kills=$((kills + 1))
    echo "killed the job ${delay} s after its backup of step $target; backups left: $left"
  else
    wait "$pid" || fail "a job failed: $(cat "$work/run.json.err")"
  fi
done
[ "$kills" -ge 5 ] || fail "only $kills kills"
job "$work/run.json" --backup-dir "$work/backups" --checkpoint-every 2 --save "$work/model"
wait "$pid" || fail "the last job: $(cat "$work/run.json.err")"
want=$(grep -o '"test_loss": [^,]*' "$work/straight.json")
got=$(grep -o '"test_loss": [^,]*' "$work/run.json")
[ -n "$want" ] && [ "$want" = "$got" ] || fail "test loss: want $want, got $got"
cmp "$work/straight/weights.ckpt" "$work/model/weights.ckpt" || fail "the weights differ"
echo "PASSED: $kills kills of the whole job, then the same $got and weights, byte for byte"
