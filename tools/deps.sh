#!/usr/bin/env bash
# tools/deps.sh — make sure the Debian packages attnd needs are installed.
#
#   tools/deps.sh build   what `make` needs to compile and `make run` to serve
#   tools/deps.sh test    that, plus what `make test` needs
#
# As root, missing packages are installed with apt-get; otherwise the one apt-get
# line to run is printed and the script fails, so nothing half-works.
set -euo pipefail

build=(gcc g++ make pkg-config libmicrohttpd-dev libjansson-dev libopenblas-dev
       libdragonbox-dev python3 python3-yaml)
test=(check curl valgrind)

want=("${build[@]}")
if [ "${1:-build}" = test ]; then
  want+=("${test[@]}")
  # The HTTP tests use Node's test runner and fetch; the spec linter runs on npm.
  command -v node >/dev/null || want+=(nodejs)
  command -v npm >/dev/null || want+=(npm)
fi

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
