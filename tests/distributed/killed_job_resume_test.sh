#!/usr/bin/env bash
# A 2-rank `sluice train --distributed --backup-dir` job killed as a whole (SIGKILL to mpirun and
# every rank, as a scheduler preempts it) at random moments after a backup, then started again
# with the same command (which resumes from the newest backup), ends with the same test loss and weights file, byte for byte, as a job never
# interrupted (issue 46).
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

start=$SECONDS
job "$work/straight.json" --save "$work/straight"
wait "$pid" || fail "the reference job: $(cat "$work/straight.json.err")"
took=$((SECONDS - start))
echo "the reference job took ${took} s: $(grep -o '"test_loss": [^,]*' "$work/straight.json")"

kills=0
for attempt in $(seq 1 40); do
  [ "$kills" -ge 5 ] && break
  job "$work/run.json" --backup-dir "$work/backups" --checkpoint-every 2 --save "$work/model"
  # Once the job has a backup (so that the next job must resume from one), a random moment
  # within half the reference job's length.
  for _ in $(seq 1 600); do
    ls "$work"/backups/ckpt-*.ckpt >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  delay=$(awk -v s="$RANDOM" -v t="$took" 'BEGIN { srand(s); printf "%.2f", rand() * t / 2 }')
  sleep "$delay"
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL -- "-$pid"
    wait "$pid" 2>/dev/null
    kills=$((kills + 1))
    left=$(ls "$work/backups" 2>/dev/null | grep -c '^ckpt-.*\.ckpt$')
    echo "killed the job ${delay} s after its first backup; backups left: $left"
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
