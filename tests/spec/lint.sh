#!/usr/bin/env bash
# tests/spec/lint.sh — checks api/openapi.yaml, the source of /openapi.yaml and /openapi.json:
#
#   1. lint: the recommended ruleset (tests/spec/redocly.yaml); errors and warnings both fail
#   2. the OpenAPI 3.1 meta-schema (validate-api)
#   3. the build's conversion (tools/yaml2json.py, python3-yaml) gives valid OpenAPI
#   4. ... and the same document a YAML 1.2 reader sees (no YAML 1.1 surprises such as
#      `no` read as false), so what is served is what was linted
#
# Needs `npm ci` (package.json at the repo root) and python3 with python3-yaml.
# Prints one line per check and a closing "spec: N passed, N failed"; exits 1 on any failure.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1
spec=api/openapi.yaml
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1

if [ ! -x node_modules/.bin/redocly ] || [ ! -x node_modules/.bin/validate-api ]; then
  echo "tests/spec/lint.sh: run 'npm ci' in $root first" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
check() { # name, then the command; output is shown only on failure
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"
    # Drop the runtime's boxed deprecation banner (Node 20), keep the findings.
    grep -v '[╔║╚]' "$tmp/out" | sed 's/^/     /'
  fi
}

lint() {
  node_modules/.bin/redocly lint --config tests/spec/redocly.yaml --format stylish "$spec" \
    >"$tmp/lint" 2>&1
  local rc=$?
  cat "$tmp/lint"
  [ $rc -eq 0 ] || return 1
  # Warnings fail too: every accepted departure is configured in redocly.yaml.
  ! grep -Eq 'You have [0-9]+ warnings?' "$tmp/lint"
}

convert() {
  /usr/bin/python3 tools/yaml2json.py "$spec" "$tmp/openapi.json" &&
    node_modules/.bin/validate-api "$tmp/openapi.json"
}

same_as_yaml12() {
  [ -s "$tmp/openapi.json" ] || { echo "no converted JSON (see the check above)"; return 1; }
  node -e '
    const fs = require("fs"), assert = require("assert");
    const YAML = require("yaml");
    const a = YAML.parse(fs.readFileSync(process.argv[1], "utf8"), { version: "1.2", uniqueKeys: true });
    const b = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
    assert.deepStrictEqual(b, JSON.parse(JSON.stringify(a)));
  ' "$spec" "$tmp/openapi.json"
}

check "redocly lint $spec (recommended, tests/spec/redocly.yaml)" lint
check "OpenAPI 3.1 meta-schema: $spec" node_modules/.bin/validate-api "$spec"
check "tools/yaml2json.py output is valid OpenAPI 3.1" convert
check "YAML 1.1 (python3-yaml) and YAML 1.2 readings agree" same_as_yaml12

echo "spec: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
