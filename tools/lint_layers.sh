#!/usr/bin/env bash
# tools/lint_layers.sh — keeps the layers clean (dependencies point down only):
#   core/    libc, libm and cblas: no JSON, no HTTP, no printing, no exit
#   api/     core and jansson: no sockets, no libmicrohttpd, no BLAS
#   server/  api and libmicrohttpd: no core, no jansson, no math
# Prints each violation as file:line and exits 1 if there is any.
set -uo pipefail
cd "$(dirname "$0")/.."

bad=0
forbid() { # folder, extended regex, why
  local hits
  hits=$(find "$1" -name '*.c' -o -name '*.h' -o -name '*.cc' | sort | xargs grep -EnH "$2" |
         grep -v '^\s*//' || true)
  if [ -n "$hits" ]; then
    printf '%s\n' "$hits" | sed "s|\$|   <- $3|"
    bad=1
  fi
}

forbid core '#include\s*[<"](jansson|microhttpd)\.h|#include\s*"(api|server)/' \
  'core/ knows no JSON, HTTP or upper layer'
forbid core '\b(printf|fprintf|puts|fputs|perror|exit|abort)\s*\(' 'core/ neither prints nor exits'
forbid api '#include\s*[<"](microhttpd\.h|sys/socket\.h|netinet/|arpa/|cblas\.h)|#include\s*"server/' \
  'api/ has no sockets, HTTP library or BLAS'
forbid server '#include\s*[<"](jansson\.h|cblas\.h|math\.h)|#include\s*"core/' \
  'server/ does no math and no JSON parsing'

if [ $bad -eq 0 ]; then
  echo "layers: 3 passed, 0 failed"
else
  echo "layers: violations above" >&2
fi
exit $bad
