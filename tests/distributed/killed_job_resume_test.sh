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
common=(train --distributed --data "$work/data" --model cnn --limit 256 --batch 16 --epochs 2
        --seed 3 --json)
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
# 256 records over 2 ranks at 16 each: 8 steps an epoch, 16 in all; a backup every 2 steps.
steps=16
step_s=$(grep -o '"train_seconds": [0-9.e-]*' "$work/straight.json" | awk -v n=$steps '{print $2 / n}')
[ -n "$step_s" ] || fail "the reference job printed no train_seconds"
echo "the reference job: ${step_s} s a step, $(grep -o '"test_loss": [^,]*' "$work/straight.json")"

# newest_backup_since MARKER: the highest step of a backup written after MARKER, or -1.
newest_backup_since() {
  find "$work/backups" -maxdepth 1 -name 'ckpt-*.ckpt' -newer "$1" 2>/dev/null |
    sed 's/.*ckpt-0*\([0-9][0-9]*\)\.ckpt$/\1/' | sort -n | tail -1 | grep . || echo -1
}

kills=0
for attempt in $(seq 1 40); do
  [ "$kills" -ge 5 ] && break
  touch "$work/started"
  job "$work/run.json" --backup-dir "$work/backups" --checkpoint-every 2 --save "$work/model"
  # A random backup step of this job, with at least 4 steps still to run after it, then a random
  # moment within one step: the kill lands while the job trains (or writes its next backup), at
  # any load, since the rest of the job slows down with it.
  target=$((2 * (1 + RANDOM % 6)))
  while kill -0 "$pid" 2>/dev/null && [ "$(newest_backup_since "$work/started")" -lt "$target" ]; do
    sleep 0.02
  done
  delay=$(awk -v s="$RANDOM" -v t="$step_s" 'BEGIN { srand(s); printf "%.3f", rand() * t }')
  sleep "$delay"
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL -- "-$pid"
    wait "$pid" 2>/dev/null
    kills=$((kills + 1))
    left=$(ls "$work/backups" 2>/dev/null | grep -c '^ckpt-.*\.ckpt$')
    echo "killed the job ${delay} s after its backup of step $target; backups left: $left"
    [ "$left" -ge 1 ] || fail "the kill left no backup to resume from"
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
