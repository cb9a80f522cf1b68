#!/usr/bin/env bash
# tests/load/run.sh ATTND — load without loss, then a shutdown under load.
#
#   1. wrk, 2 threads, LOAD_CONNECTIONS (64) keep-alive connections for LOAD_SECONDS
#      (20) of mixed valid requests (tests/load/mixed.lua). Passes with 0 socket
#      errors, 0 statuses other than 200, and a flat RSS: the peak of the second
#      half at most 10% (and at least 8 MiB) above the peak of the first half, whose
#      first 2 s are warm-up. RSS is read from /proc/PID/status once a second.
#   2. tests/load/drain.mjs: 64 clients in a loop, SIGTERM in the middle; requests in
#      flight complete, new ones are refused cleanly, the process exits 0 in time.
# Results go to build/load/ and one summary line each to stdout.
set -euo pipefail
bin=${1:?usage: tests/load/run.sh ATTND}
seconds=${LOAD_SECONDS:-20}
connections=${LOAD_CONNECTIONS:-64}
cd "$(dirname "$0")/../.."
out=build/load
mkdir -p "$out"
command -v wrk >/dev/null || { echo "wrk is missing: make deps-test installs it" >&2; exit 1; }

"$bin" --port 0 --log off > "$out/attnd.out" 2> "$out/attnd.err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  port=$(sed -n 's/^attnd listening on http:\/\/[^ ]*:\([0-9]*\)$/\1/p' "$out/attnd.out")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "${port:-}" ] || { echo "attnd did not start: $(cat "$out/attnd.err")" >&2; exit 1; }

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
( for t in $(seq 0 "$seconds"); do echo "$t $(rss_kib)"; sleep 1; done ) > "$out/rss.txt" &
sampler=$!
wrk -t2 -c"$connections" -d"${seconds}s" --timeout 5s --latency -s tests/load/mixed.lua \
  "http://127.0.0.1:$port" > "$out/wrk.txt"
wait "$sampler" || true
cat "$out/wrk.txt"

fail=0
line=$(grep '^load:' "$out/wrk.txt")
rps=$(awk '/^Requests\/sec:/ {print $2}' "$out/wrk.txt")
errors=$(echo "$line" | sed 's/.*errors connect \([0-9]*\) read \([0-9]*\) write \([0-9]*\) timeout \([0-9]*\).*/\1 \2 \3 \4/')
unexpected=$(echo "$line" | sed 's/.*unexpected statuses \([0-9]*\).*/\1/')
[ "$errors" = "0 0 0 0" ] || { echo "FAIL: socket errors (connect read write timeout): $errors" >&2; fail=1; }
[ "$unexpected" = 0 ] || { echo "FAIL: $unexpected responses were not 200" >&2; fail=1; }
read -r first second < <(awk -v half=$((seconds / 2)) '
  $1 >= 2 && $1 < half && $2 > a {a = $2}
  $1 >= half && $2 > b {b = $2}
  END {print a + 0, b + 0}' "$out/rss.txt")
allowed=$(( first / 10 > 8192 ? first / 10 : 8192 ))
echo "load: ${rps} req/s at ${connections} connections for ${seconds}s; RSS peak ${first} KiB in" \
     "the first half, ${second} KiB in the second"
[ "$first" -gt 0 ] && [ "$second" -le $(( first + allowed )) ] ||
  { echo "FAIL: RSS grew from ${first} to ${second} KiB" >&2; fail=1; }

kill -TERM "$pid"
wait "$pid" || { echo "FAIL: attnd exited with $? after the load" >&2; fail=1; }
trap - EXIT

node tests/load/drain.mjs "$bin" | tee "$out/drain.txt" || fail=1
exit $fail
