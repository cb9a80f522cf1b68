#!/usr/bin/env bash
# bench/run.sh — `make bench`'s driver: every number of attnd's Performance table, in one run.
#
#   bench/run.sh [BUILD_DIR]        (make bench builds BUILD_DIR/attnd and the bench binaries first)
#
# In order, and all printed as one report (also saved to BUILD_DIR/bench/report.txt):
#   1. payloads: bench/gen_payloads.py writes tiny, medium, large, xl into BUILD_DIR/bench/,
#      each as JSON and as a V2 binary request (NAME.v2.bin: every step asked, binary FP64)
#   2. core: attn_forward vs attn_reference vs bare cblas_dgemm (core_bench core); the
#      floor rows (core_bench floor: every step, weights and output, output and lse, and
#      numpy's naive attention, each as a ratio to the bare dgemm pair, n = 512 … 2048);
#      the variants; a request in each low format against float64 (core_bench precision);
#      the exponential (exp_bench: attn_row_exp against SLEEF and glibc)
#   3. JSON: jansson's parse and api_handle in process (core_bench json)
#   4. memory: a fresh attnd's peak RSS (VmHWM) after serving one xl request, and another
#      fresh one's after one xl V2 binary request; then the long request (BENCH_LONG):
#      n_q = n_k = 32,768, d = 64, Q, K, V as V2 BF16 binary, OUTPUT and LSE asked, to a
#      fresh attnd with default limits: its time, its peak RSS above idle, and the bare
#      dgemm pair at that n on as many threads (core_bench pair); a refusal is reported
#   5. HTTP: wrk against attnd, the two libmicrohttpd floors (bench/floor.c: a fixed reply,
#      and a replay of attnd's real response) and the FastAPI + numpy service
#      (bench/pyservice.py), for each payload and connection count, interleaved so every
#      ratio compares runs made seconds apart, each with the server's CPU time over it
#      (per request in the report); and the same for V2 binary: attnd's
#      /v2/models/attention/infer (target v2), a replay of attnd's binary answer with its
#      headers (replay_v2) and the Python service's V2 route (python_v2). The services'
#      answers to the medium payload are compared first, JSON and V2 (weights to 1e-9);
#      a disagreement stops the bench.
#   6. the targets, PASS or MISS (bench/report.py); never asserted.
#
# Settings (environment): BENCH_SECONDS (5) per wrk run, or longer, up to BENCH_MAX_SECONDS
# (30), where ten of a server's requests per connection take longer (run_seconds), BENCH_PAYLOADS ("tiny medium
# large xl"), BENCH_CONNS ("1 8 64"), BENCH_ROUNDS (3: how many times a run of BENCH_SECONDS
# is made, attnd and its floors in turn; the report takes medians), BENCH_TIMEOUT (60s,
# wrk's per-request timeout),
# BENCH_BUDGET (0.3 s per in-process measurement), BENCH_CORE_N (core sizes, default
# 64 … 2048), BENCH_LONG (1; 0 skips the long request). Between runs the bench waits until the server it just loaded has gone
# idle (its CPU time stops moving), so a backlog never spills into the next run.
# Every server runs with its access log off: the bench measures the work, not logging.
# attnd runs with its default limits: xl's V2 request (every step asked, in binary) is
# estimated at what it holds at once (body, inputs, the trace its answer is sent from),
# under the default --max-request-bytes; the memory section measures what it really holds.
#
# Not here: building (the Makefile), installing (tools/deps.sh bench), asserting.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${1:-build}
OUT=$BUILD/bench
SECS=${BENCH_SECONDS:-5}
LONG=${BENCH_LONG:-1}
SECS_MAX=${BENCH_MAX_SECONDS:-30}
PAYLOADS=${BENCH_PAYLOADS:-tiny medium large xl}
CONNS=${BENCH_CONNS:-1 8 64}
TIMEOUT=${BENCH_TIMEOUT:-60s}
ROUNDS=${BENCH_ROUNDS:-3}
NPROC=$(nproc)
PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 # attnd sets it itself; the Python service is told here
# OpenBLAS's CPU detection can miss a virtual CPU and fall back to generic kernels;
# attnd then advises OPENBLAS_CORETYPE at startup (docs/design.md, "BLAS kernels"). The bench
# follows that advice, for every process it starts (numpy uses the same OpenBLAS),
# unless the variable is already set. BLAS_NOTE says which it was, for the header.
BLAS_NOTE="OpenBLAS's own choice of kernels"
if [ -n "${OPENBLAS_CORETYPE+set}" ]; then
  BLAS_NOTE="OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE (from the environment)"
elif advice=$("$BUILD/bench/core_bench" blas-core 2>/dev/null) && [ -n "$advice" ]; then
  export OPENBLAS_CORETYPE=$advice
  BLAS_NOTE="OPENBLAS_CORETYPE=$advice (attnd's startup advice on this CPU), for every process"
fi
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the source tree

for tool in wrk curl "$PY" "$BUILD/attnd" "$OUT/floor" "$OUT/core_bench" "$OUT/exp_bench"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing (make bench builds and installs all)" >&2; exit 1; }
done
mkdir -p "$OUT"
REPORT=$OUT/report.txt
META=$OUT/meta.txt
TSV=$OUT/http.tsv
WRKLOG=$OUT/wrk.log
: > "$META"; : > "$WRKLOG"
echo "payload conns target requests seconds rps p50_ms p99_ms errors cpu_ms" > "$TSV"
HZ=$(getconf CLK_TCK)
exec > >(tee "$REPORT")   # the report on stdout and in report.txt; progress goes to stderr

# ---- processes we start, and only those, are stopped at exit ----
PIDS=()
note() { echo "bench: $*" >&2; }

# PIDs of the given roots and all their descendants.
tree() {
  ps -e -o pid=,ppid= | awk -v roots="$*" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END { do { grew = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 } } while (grew)
          for (p in keep) print p }'
}

# Stops a server we started (its whole tree: uvicorn's workers too) and forgets it.
stop() { # PID
  local p keep=()
  for p in $(tree "$1"); do kill "$p" 2>/dev/null || true; done
  wait "$1" 2>/dev/null || true
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
stop_all() {
  local p
  for p in "${PIDS[@]}"; do stop "$p"; done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# CPU time (clock ticks, user + system, every thread) of a process tree.
ticks() {
  local p
  for p in $(tree "$@"); do
    # Fields after the ")" that closes the command name: utime is the 12th, stime the 13th.
    sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | awk '{ print $12 + $13 }'
  done | awk '{ s += $1 } END { print s + 0 }'
}

# Waits until a process tree has been idle for half a second (at most 180 s).
settle() {
  local a b quiet=0 waited=0
  a=$(ticks "$@")
  while [ $quiet -lt 2 ] && [ $waited -lt 720 ]; do
    sleep 0.25
    b=$(ticks "$@")
    if [ $((b - a)) -le 1 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    a=$b
    waited=$((waited + 1))
  done
}

# Starts a server in the background, its stdout in FILE; sets STARTED to its PID.
start() { # FILE CMD...
  local file=$1
  shift
  "$@" > "$file" 2>"$file.err" &
  STARTED=$!
  PIDS+=("$STARTED")
}

# Waits for "... port N" or "http://ADDR:N" in FILE; prints N.
port_of() { # FILE PID
  local port
  # Up to 60 s: on a loaded machine the replay floor reads xl's 135 MB answer first.
  for _ in $(seq 1 1200); do
    port=$(grep -oE '(port |:)[0-9]+$' "$1" 2>/dev/null | grep -oE '[0-9]+$' | head -1 || true)
    [ -n "$port" ] && { echo "$port"; return 0; }
    kill -0 "$2" 2>/dev/null || break
    sleep 0.05
  done
  echo "bench: server did not start: $(cat "$1" "$1.err" 2>/dev/null | tail -5)" >&2
  return 1
}

# POSTs a payload; the answer in OUTFILE; fails unless the status is 200.
post() { # PORT PAYLOAD OUTFILE: the answer into OUTFILE, its time in ms into OUTFILE.ms
  local code ms
  read -r code ms < <(curl -s -o "$3" -w '%{http_code} %{time_total}' \
    -H 'Content-Type: application/json' --data-binary "@$OUT/$2.json" \
    "http://127.0.0.1:$1/v1/attention" | awk '{ print $1, $2 * 1000 }')
  [ "$code" = 200 ] || { echo "bench: $2 on port $1 answered $code: $(head -c 300 "$3")" >&2; return 1; }
  echo "$ms" > "$3.ms"
}

# POSTs a payload's V2 binary request as tritonclient.http does (the header's length in
# Inference-Header-Content-Length, no Content-Type); the answer in OUTFILE, the
# answer's header length in OUTFILE.hlen, its time in ms in OUTFILE.ms; fails unless 200.
post_v2() { # PORT PAYLOAD OUTFILE
  local code ms
  read -r code ms < <(curl -s -o "$3" -D "$3.headers" -w '%{http_code} %{time_total}' -H 'Content-Type:' \
    -H "Inference-Header-Content-Length: $(cat "$OUT/$2.v2.hlen")" --data-binary "@$OUT/$2.v2.bin" \
    "http://127.0.0.1:$1/v2/models/attention/infer" | awk '{ print $1, $2 * 1000 }')
  [ "$code" = 200 ] || { echo "bench: V2 $2 on port $1 answered $code: $(head -c 300 "$3")" >&2; return 1; }
  tr -d '\r' < "$3.headers" | awk -F': *' 'tolower($1) == "inference-header-content-length" { print $2 }' > "$3.hlen"
  [ -s "$3.hlen" ] || { echo "bench: V2 $2 on port $1: no Inference-Header-Content-Length" >&2; return 1; }
  echo "$ms" > "$3.ms"
}

kib_to_bytes() { awk '{ print $2 * 1024 }'; }

# ---- 0. the machine ----
CPU=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
echo "attnd bench, $(date -u '+%Y-%m-%d %H:%M UTC'): nproc $NPROC, $CPU, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r)"
echo "attnd $("$BUILD/attnd" --version 2>/dev/null | head -1); $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2);" \
  "$("$PY" -c 'import fastapi, uvicorn, numpy, ujson, importlib.util as u; print("FastAPI", fastapi.__version__, "uvicorn", uvicorn.__version__, "(" + ("uvloop" if u.find_spec("uvloop") else "asyncio"), "+", ("httptools" if u.find_spec("httptools") else "h11") + ")", "numpy", numpy.__version__, "ujson", ujson.__version__)')"
echo "BLAS: $BLAS_NOTE"
echo "numbers: $("$OUT/core_bench" number-paths 2>/dev/null || echo "(core_bench number-paths failed)")"
echo "seconds=$SECS" >> "$META"
echo "max_seconds=$SECS_MAX" >> "$META"
echo "rounds=$ROUNDS" >> "$META"
echo

# ---- 1. payloads ----
note "writing payloads into $OUT"
"$PY" bench/gen_payloads.py "$OUT" >&2
[ "$LONG" = 0 ] || "$PY" bench/gen_payloads.py "$OUT" long >&2
for p in $PAYLOADS; do
  echo "req_$p=$(stat -c %s "$OUT/$p.json")" >> "$META"
  echo "req_v2_$p=$(stat -c %s "$OUT/$p.v2.bin")" >> "$META"
done

# ---- 2, 3. in process ----
note "core bench (the naive reference takes about a minute at n = 2048)"
# shellcheck disable=SC2086
"$OUT/core_bench" core ${BENCH_CORE_N:-}
echo
note "floor bench (each way of asking against the bare dgemm pair, and numpy's, n = 512 … 2048)"
"$OUT/core_bench" floor
echo
note "variants bench (each attention variant against the plain pass, n = 512 and 2048)"
"$OUT/core_bench" variants
echo
note "precision bench (a request in each low format against float64, n = 512)"
"$OUT/core_bench" precision
echo
note "masks bench (8 packed documents against the dense problem, n = 2048 and 4096)"
"$OUT/core_bench" masks
echo
note "backward bench (every gradient step against the forward's every step, n = 512 and 1024)"
"$OUT/core_bench" backward
echo
note "exp bench (attn_row_exp against SLEEF's and glibc's exp)"
"$OUT/exp_bench"
echo
note "JSON bench"
# shellcheck disable=SC2086
BENCH_META=$META "$OUT/core_bench" json "$OUT" $PAYLOADS
echo

# ---- 4. memory: a fresh attnd, one xl request ----
ATTND_ARGS=(--port 0 --log off --bind 127.0.0.1)
if [[ " $PAYLOADS " == *" xl "* ]]; then
  note "memory: one xl request to a fresh attnd"
  start "$OUT/attnd-mem.out" "$BUILD/attnd" "${ATTND_ARGS[@]}"
  MEMPID=$STARTED
  port=$(port_of "$OUT/attnd-mem.out" "$MEMPID")
  echo "rss_idle=$(grep VmRSS "/proc/$MEMPID/status" | kib_to_bytes)" >> "$META"
  post "$port" xl "$OUT/xl.response.json"
  echo "hwm_xl=$(grep VmHWM "/proc/$MEMPID/status" | kib_to_bytes)" >> "$META"
  stop "$MEMPID"
  note "memory: one xl V2 binary request to a fresh attnd"
  start "$OUT/attnd-mem.out" "$BUILD/attnd" "${ATTND_ARGS[@]}"
  MEMPID=$STARTED
  port=$(port_of "$OUT/attnd-mem.out" "$MEMPID")
  echo "rss_idle_v2=$(grep VmRSS "/proc/$MEMPID/status" | kib_to_bytes)" >> "$META"
  post_v2 "$port" xl "$OUT/xl.v2.response.bin"
  echo "hwm_v2_xl=$(grep VmHWM "/proc/$MEMPID/status" | kib_to_bytes)" >> "$META"
  stop "$MEMPID"
fi

# ---- 4b. the long request: a fresh attnd, one n = 32,768 V2 BF16 request ----
# Its answer is only counted (OUTPUT 16 MiB, LSE 256 KiB), and a refusal is a figure
# too: "n/a (refused: STATUS TYPE)" in the report, never a failure of the bench.
long_request() {
  local port code ms
  start "$OUT/attnd-long.out" "$BUILD/attnd" "${ATTND_ARGS[@]}"
  LONGPID=$STARTED
  port=$(port_of "$OUT/attnd-long.out" "$LONGPID")
  echo "rss_idle_long=$(grep VmRSS "/proc/$LONGPID/status" | kib_to_bytes)" >> "$META"
  echo "req_long=$(stat -c %s "$OUT/long.v2.bin")" >> "$META"
  read -r code ms < <(curl -s -o "$OUT/long.response.bin" -w '%{http_code} %{time_total}' -H 'Content-Type:' \
    -H "Inference-Header-Content-Length: $(cat "$OUT/long.v2.hlen")" --data-binary "@$OUT/long.v2.bin" \
    "http://127.0.0.1:$port/v2/models/attention/infer" | awk '{ print $1, $2 * 1000 }')
  echo "hwm_long=$(grep VmHWM "/proc/$LONGPID/status" | kib_to_bytes)" >> "$META"
  stop "$LONGPID"
  echo "long_status=$code" >> "$META"
  if [ "$code" != 200 ]; then # the problem's type and pointer, for the report line
    "$PY" -c 'import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print("long_type=" + str(d.get("type", "?")))
    print("long_pointer=" + str((d.get("errors") or [{}])[0].get("pointer", "")))
except ValueError:
    print("long_type=(not JSON)")' "$OUT/long.response.bin" >> "$META"
    note "long request refused: $code"
    return 0
  fi
  echo "long_ms=$ms" >> "$META"
  echo "resp_long=$(stat -c %s "$OUT/long.response.bin")" >> "$META"
  note "the bare dgemm pair at n = 32,768 on $NPROC threads (seconds)"
  "$OUT/core_bench" pair 32768 "$NPROC" | tr ' ' '\n' | sed 's/^/long_/' >> "$META"
}
if [ "$LONG" != 0 ]; then
  note "long: one n = 32,768 V2 BF16 request (OUTPUT, LSE) to a fresh attnd"
  long_request
fi

# ---- 5. HTTP ----
note "starting attnd, the fixed-reply floor and the Python service"
start "$OUT/attnd.out" "$BUILD/attnd" "${ATTND_ARGS[@]}"; ATTND_PID=$STARTED
start "$OUT/fixed.out" "$OUT/floor" fixed 0; FIXED_PID=$STARTED
PYPORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start "$OUT/python.out" "$PY" bench/pyservice.py --port "$PYPORT" --workers 2; PY_PID=$STARTED
ATTND_PORT=$(port_of "$OUT/attnd.out" "$ATTND_PID")
FIXED_PORT=$(port_of "$OUT/fixed.out" "$FIXED_PID")
port_of "$OUT/python.out" "$PY_PID" > /dev/null
for _ in $(seq 1 200); do
  curl -sf "http://127.0.0.1:$PYPORT/healthz" > /dev/null && break
  kill -0 "$PY_PID" 2>/dev/null || { echo "bench: the Python service died: $(tail -5 "$OUT/python.out.err")" >&2; exit 1; }
  sleep 0.1
done
sleep 1 # the second worker

# Every payload's real response (xl's came from the memory run), and Python's answers.
for p in $PAYLOADS; do
  if [ "$p" != xl ] || [ ! -s "$OUT/xl.response.json" ]; then
    post "$ATTND_PORT" "$p" "$OUT/$p.response.json"
  fi
  echo "resp_$p=$(stat -c %s "$OUT/$p.response.json")" >> "$META"
  post "$PYPORT" "$p" "$OUT/$p.python.json" # also warms both workers' code paths up
  if [ "$p" != xl ] || [ ! -s "$OUT/xl.v2.response.bin" ]; then
    post_v2 "$ATTND_PORT" "$p" "$OUT/$p.v2.response.bin"
  fi
  echo "resp_v2_$p=$(stat -c %s "$OUT/$p.v2.response.bin")" >> "$META"
  post_v2 "$PYPORT" "$p" "$OUT/$p.python_v2.bin"
done
# shellcheck disable=SC2086
"$PY" bench/report.py pyjson "$OUT" $PAYLOADS
echo
if [[ " $PAYLOADS " == *" medium "* ]]; then
  echo "agreement on the medium payload, attnd vs the Python service (before any timing):"
  "$PY" bench/report.py compare "$OUT/medium.response.json" "$OUT/medium.python.json" ||
    { echo "bench: attnd and the Python service disagree; not timing them" >&2; exit 1; }
  echo "agreement on the medium payload's V2 binary answers, attnd vs the Python service:"
  "$PY" bench/report.py compare-v2 "$OUT/medium.v2.response.bin" "$OUT/medium.python_v2.bin" ||
    { echo "bench: attnd and the Python service disagree on V2; not timing them" >&2; exit 1; }
  echo
fi

# Seconds for SERVER's run of PAYLOAD at CONNS connections: BENCH_SECONDS, or long
# enough for each connection to finish about ten of that server's requests, at most
# BENCH_MAX_SECONDS. wrk counts what completes inside its window, and the work in
# flight when the window closes is lost: at 64 connections on the large payload a 5 s
# window would finish half of what attnd computed and report a collapse that is not
# there, and at one connection on xl it held two of the Python service's 2-second
# answers, a ratio resting on two samples. A request's time at c connections is
# estimated as t1 × max(c / NPROC, 1) (t1: the p50 at one connection, or before that
# is measured, the time of the server's first answer), or, when longer, from the run
# just below c once the server was saturated there (c0 >= NPROC connections): its
# p50 × c / c0. Not t1 alone: attnd alone on the machine splits a large request over
# both cores, which it cannot do under load, so t1 × c / NPROC came to half the time
# of a request at 64 connections and the window was too short by as much. The floors run as
# long as attnd (SERVER attnd); the Python service by its own times.
run_seconds() { # PAYLOAD CONNS SERVER
  local t1 below
  t1=$(awk -v p="$1" -v t="$3" '$1 == p && $2 == 1 && $3 == t { x = $7 } END { print x + 0 }' "$TSV")
  local first # post()'s or post_v2()'s time for the server's first answer
  case $3 in
    attnd) first="$OUT/$1.response.json.ms" ;;
    v2) first="$OUT/$1.v2.response.bin.ms" ;;
    python_v2) first="$OUT/$1.python_v2.bin.ms" ;;
    *) first="$OUT/$1.$3.json.ms" ;;
  esac
  if [ "$t1" = 0 ] && [ -s "$first" ]; then
    t1=$(cat "$first")
  fi
  # "c0 p50" of the run with the most connections below CONNS, or "0 0"
  below=$(awk -v p="$1" -v t="$3" -v c="$2" '$1 == p && $3 == t && $2 < c && $2 > c0 { c0 = $2; x = $7 }
            END { print c0 + 0, x + 0 }' "$TSV")
  awk -v s="$SECS" -v t="$t1" -v c="$2" -v n="$NPROC" -v cap="$SECS_MAX" -v below="$below" 'BEGIN {
    split(below, b, " "); per = t * (c > n ? c / n : 1)
    if (b[1] >= n && b[2] * c / b[1] > per) per = b[2] * c / b[1]
    d = 10 * per / 1000; if (d < s) d = s; if (d > cap) d = cap
    printf "%d\n", (d == int(d)) ? d : int(d) + 1 }'
}

run_wrk() { # TARGET PAYLOAD CONNS PORT PID SECONDS
  local target=$1 p=$2 c=$3 port=$4 pid=$5 secs=$6 threads line
  # V2 targets post the binary body to the V2 path, with its header's length.
  local body="$OUT/$p.json" hlen="" url="http://127.0.0.1:$port/v1/attention"
  case $target in
    v2 | replay_v2 | python_v2)
      body="$OUT/$p.v2.bin" hlen=$(cat "$OUT/$p.v2.hlen") url="http://127.0.0.1:$port/v2/models/attention/infer" ;;
  esac
  threads=$((c < NPROC ? c : NPROC))
  # Every server quiet, not only this one: after wrk stops, the Python service can
  # still be working through the requests that 64 connections queued (seconds of CPU
  # at large), and that would be measured as the next target's slowness.
  settle "${PIDS[@]}"
  note "wrk $target $p, $c connection(s), ${secs}s"
  # The server's CPU time during the run (its whole tree), for CPU per request; the
  # requests in flight when wrk stops blur it a little (more at 64 connections).
  local cpu0 cpu_ms
  cpu0=$(ticks "$pid")
  line=$(BENCH_BODY="$body" BENCH_HEADER_LENGTH="$hlen" wrk -t"$threads" -c"$c" -d"${secs}s" --timeout "$TIMEOUT" \
           --latency -s bench/post.lua "$url" 2>&1 |
         tee -a "$WRKLOG" | grep '^BENCH ' || true)
  cpu_ms=$(( ($(ticks "$pid") - cpu0) * 1000 / HZ ))
  if [ -z "$line" ]; then
    note "wrk gave no result for $target $p $c (see $WRKLOG)"
    return 0
  fi
  # BENCH requests=N seconds=S rps=R p50_ms=A p99_ms=B errors=E ...
  echo "$line" | awk -v p="$p" -v c="$c" -v t="$target" -v cpu="$cpu_ms" '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    print p, c, t, v["requests"], v["seconds"], v["rps"], v["p50_ms"], v["p99_ms"], v["errors"], cpu }' >> "$TSV"
}

for p in $PAYLOADS; do
  start "$OUT/replay.out" "$OUT/floor" replay 0 "$OUT/$p.response.json"; REPLAY_PID=$STARTED
  REPLAY_PORT=$(port_of "$OUT/replay.out" "$REPLAY_PID")
  start "$OUT/replay_v2.out" "$OUT/floor" replay-v2 0 "$OUT/$p.v2.response.bin" \
    "$(cat "$OUT/$p.v2.response.bin.hlen")"; REPLAY_V2_PID=$STARTED
  REPLAY_V2_PORT=$(port_of "$OUT/replay_v2.out" "$REPLAY_V2_PID")
  # The binary floor gives back attnd's answer byte for byte, with its header length.
  post_v2 "$REPLAY_V2_PORT" "$p" "$OUT/$p.replay_v2.bin"
  if ! cmp -s "$OUT/$p.replay_v2.bin" "$OUT/$p.v2.response.bin" ||
     ! cmp -s "$OUT/$p.replay_v2.bin.hlen" "$OUT/$p.v2.response.bin.hlen"; then
    echo "bench: the binary replay floor does not give back attnd's answer for $p" >&2
    exit 1
  fi
  for c in $CONNS; do
    echo "=== $p, $c connection(s)" >> "$WRKLOG"
    secs=$(run_seconds "$p" "$c" attnd)
    secs_v2=$(run_seconds "$p" "$c" v2)
    # Two runs of 5 s made a few seconds apart on this shared machine can differ by more
    # than a target's margin, so short runs are made ROUNDS times, attnd and its floors
    # in turn, and the report takes medians (and each ratio round by round). A longer
    # run averages over its own length and is made once.
    # The binary path the same way, in the same rounds: attnd V2 and its binary floor
    # after attnd JSON and its floors, so V2 over JSON is also a pair seconds apart.
    rounds=$ROUNDS rounds_v2=$ROUNDS
    [ "$secs" -gt "$SECS" ] && rounds=1
    [ "$secs_v2" -gt "$SECS" ] && rounds_v2=1
    for i in $(seq $((rounds > rounds_v2 ? rounds : rounds_v2))); do
      if [ "$i" -le "$rounds" ]; then
        run_wrk attnd "$p" "$c" "$ATTND_PORT" "$ATTND_PID" "$secs"
        run_wrk fixed "$p" "$c" "$FIXED_PORT" "$FIXED_PID" "$secs"
        run_wrk replay "$p" "$c" "$REPLAY_PORT" "$REPLAY_PID" "$secs"
      fi
      if [ "$i" -le "$rounds_v2" ]; then
        run_wrk v2 "$p" "$c" "$ATTND_PORT" "$ATTND_PID" "$secs_v2"
        run_wrk replay_v2 "$p" "$c" "$REPLAY_V2_PORT" "$REPLAY_V2_PID" "$secs_v2"
      fi
    done
    run_wrk python "$p" "$c" "$PYPORT" "$PY_PID" "$(run_seconds "$p" "$c" python)"
    run_wrk python_v2 "$p" "$c" "$PYPORT" "$PY_PID" "$(run_seconds "$p" "$c" python_v2)"
  done
  stop "$REPLAY_PID"
  stop "$REPLAY_V2_PID"
done
settle "$PY_PID"

"$PY" bench/report.py table "$TSV" "$META"
echo
echo "raw: $TSV, wrk's own reports: $WRKLOG, this report: $REPORT"
