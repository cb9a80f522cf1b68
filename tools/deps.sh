#!/usr/bin/env bash
# tools/deps.sh — make sure the Debian packages attnd needs are installed.
#
#   tools/deps.sh build   what `make` needs to compile and `make run` to serve
#   tools/deps.sh test    that, plus what `make test` needs
#   tools/deps.sh bench   that of build, plus what `make bench` needs (never part of test)
#
# As root, missing packages are installed with apt-get; otherwise the one apt-get
# line to run is printed and the script fails, so nothing half-works.
set -euo pipefail

build=(gcc g++ make pkg-config libmicrohttpd-dev libjansson-dev libopenblas-dev zlib1g-dev
       libdragonbox-dev libfast-float-dev python3 python3-yaml)
test=(check curl jq valgrind python3-numpy)
# The browser tests drive Debian's chromium (playwright-core never downloads one);
# fonts-nanum lets the screenshots show Hangul labels.
test+=(chromium fonts-nanum)
# Hardening (make fuzz, make tsan, make load): clang's libFuzzer and sanitizers, wrk.
test+=(clang libclang-rt-14-dev wrk)
# `make faults`: replicas behind HAProxy (run unprivileged on loopback ports).
test+=(haproxy)
# `make bench`: wrk, and the FastAPI + numpy service it compares with (uvloop and
# httptools are uvicorn's fast event loop and HTTP parser, which it picks when present).
bench=(curl wrk python3-numpy python3-fastapi python3-uvicorn python3-ujson python3-uvloop
       python3-httptools)
# The exp section measures SLEEF's vectorized exp beside attnd's own (bench/exp_bench.c).
bench+=(libsleef-dev)

want=("${build[@]}")
if [ "${1:-build}" = test ]; then
  want+=("${test[@]}")
  # The HTTP tests use Node's test runner and fetch; the spec linter runs on npm.
  command -v node >/dev/null || want+=(nodejs)
  command -v npm >/dev/null || want+=(npm)
  # `make k8s` renders docker/k8s with `kubectl kustomize` (no cluster needed).
  command -v kubectl >/dev/null || want+=(kubernetes-client)
fi
[ "${1:-build}" = bench ] && want+=("${bench[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "attnd needs these Debian packages: ${missing[*]}" >&2
  echo "install them with:  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2
