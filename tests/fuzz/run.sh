#!/usr/bin/env bash
# tests/fuzz/run.sh BUILD_DIR SECONDS — run every fuzzer built under BUILD_DIR for
# SECONDS each, one after the other (the machines have few cores to spare).
#
# Each harness starts from its seeds (tests/fuzz/seeds.py: the tests' bodies, every
# route, the hand-written seeds and regressions of tests/fuzz/corpus/NAME), so a
# seed that once crashed is replayed on every run before any new input is tried.
# What it learns is kept in BUILD_DIR/fuzz-work/corpus/NAME for the next local run.
# A crash, a leak (LeakSanitizer), undefined behaviour, a timeout (-timeout=10) or
# more than 1 GiB of memory fails the run; the input is kept in
# BUILD_DIR/fuzz-work/artifacts/NAME/ and its path printed: copy it to
# tests/fuzz/corpus/NAME/ once the bug is fixed, and it becomes a regression seed.
set -euo pipefail
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR SECONDS}
seconds=${2:?usage: tests/fuzz/run.sh BUILD_DIR SECONDS}
cd "$(dirname "$0")/../.."

work=$build/fuzz-work
rm -rf "$work/seeds"
tests/fuzz/seeds.py "$work/seeds" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

declare -A max_len=([api]=16384 [numfmt]=9 [reader]=16384 [render]=8192 [v2]=16384)
summary=()
for h in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$h" ] || continue
  name=${h##*/fuzz_}
  corpus=$work/corpus/$name artifacts=$work/artifacts/$name
  mkdir -p "$corpus" "$artifacts" "$work/seeds/$name" tests/fuzz/corpus/"$name"
  dict=(); [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  echo "== fuzz $name for ${seconds}s"
  log=$work/$name.log
  if ! "$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
       -max_len="${max_len[$name]:-4096}" -artifact_prefix="$artifacts/" \
       -print_final_stats=1 "${dict[@]}" \
       "$corpus" "$work/seeds/$name" tests/fuzz/corpus/"$name" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz $name FAILED: the input is in $artifacts/ (log: $log)" >&2
    exit 1
  fi
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  units=$(find "$corpus" -type f | wc -l)
  line="fuzz $name: $execs executions in ${seconds}s, corpus $units inputs, no failure"
  echo "$line"
  summary+=("$line")
done
[ ${#summary[@]} -gt 0 ] || { echo "no fuzzers under $build/tests/fuzz" >&2; exit 1; }
printf '%s\n' "${summary[@]}" > "$work/summary.txt"
