#!/usr/bin/env bash
# tests/lint/run.sh — tools/lint_rooms.py and tools/lint_messages.py fail on what they
# exist to catch. Each case plants one violation in a fresh copy of api/ (and server/)
# and expects the lint to exit 1 naming it; the untouched copy must pass. Run by
# `make lint`.
set -uo pipefail
cd "$(dirname "$0")/../.."

lint=tools/lint_rooms.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

fresh() { rm -rf "$work/tree" && mkdir -p "$work/tree" && cp -r api server "$work/tree/"; }

expect_pass() {
  fresh
  if /usr/bin/python3 "$lint" "$work/tree" >/dev/null 2>&1; then
    passed=$((passed + 1))
  else
    echo "FAIL untouched copy: the lint should pass"; failed=$((failed + 1))
  fi
}

# name, expected text in the lint's output, then a command that plants the violation
expect_fail() {
  local name=$1 want=$2
  shift 2
  fresh
  (cd "$work/tree" && eval "$@")
  local out status
  out=$(/usr/bin/python3 "$lint" "$work/tree" 2>&1)
  status=$?
  if [ $status -eq 1 ] && grep -qF -- "$want" <<<"$out"; then
    passed=$((passed + 1))
  else
    echo "FAIL $name: expected exit 1 and \"$want\", got exit $status:"
    printf '%s\n' "$out" | sed 's/^/  /'
    failed=$((failed + 1))
  fi
}

expect_pass
expect_fail "upward include" "api/json/buf.c:" \
  'echo "#include \"api/http/problem.h\"" >> api/json/buf.c'
expect_fail "upward include names the room" "includes api/http/problem.h, a room above api/json/" \
  'echo "#include \"api/http/problem.h\"" >> api/json/buf.c'
expect_fail "upward call" "calls api_respond_problem (api/http/problem), a room above api/render/" \
  'printf "void api_render_planted(void)\n{\n    api_respond_problem(0, 0, 0);\n}\n" >> api/render/text.c'
expect_fail "cycle inside a room" "cycle of 2 api/ files: api/request/grid, api/request/random" \
  'printf "void api_random_planted(void)\n{\n    api_grid_deinit(0);\n}\n" >> api/request/random.c &&
   printf "void api_grid_planted(void)\n{\n    api_random_fill(0, 0, 0, 0, 0);\n}\n" >> api/request/grid.c'
expect_fail "cycle through includes" "cycle of 2 api/ files: api/http/negotiate, api/http/respond" \
  'echo "#include \"api/http/respond.h\"" >> api/http/negotiate.h &&
   echo "#include \"api/http/negotiate.h\"" >> api/http/respond.h'
expect_fail "file at the root" "api/helpers.c: only the router" \
  'echo "int api_helpers;" > api/helpers.c'
expect_fail "file outside the rooms" "api/util/x.c: not in a room" \
  'mkdir -p api/util && echo "int x;" > api/util/x.c'
expect_fail "a family folder outside endpoints/" "api/render/family/x.c: not in a room" \
  'mkdir -p api/render/family && echo "int x;" > api/render/family/x.c'
expect_fail "a family calling the router" "calls api_route_of (api/api), a room above api/endpoints/v2/" \
  'printf "void api_v2_planted(void)\n{\n    api_route_of(0);\n}\n" >> api/endpoints/v2/grid.c'
expect_fail "the words reaching up" "includes api/json/buf.h, a room above api/i18n/" \
  'echo "#include \"api/json/buf.h\"" >> api/i18n/fill.c'
expect_fail "a test hook in production" "api/http/respond.c:" \
  'echo "#include \"api/json/test_hooks.h\"" >> api/http/respond.c'
expect_fail "a test hook named" "includes api/json/test_hooks.h, which only tests/ and api/json/'s own files may include" \
  'echo "#include \"api/json/test_hooks.h\"" >> api/http/respond.c'
expect_fail "server: a test hook in the wiring" "includes server/ops/test_hooks.h, which only tests/ and server/ops/'s own files may include" \
  'echo "#include \"server/ops/test_hooks.h\"" >> server/state.c'
expect_fail "server: upward include" "includes server/lane/lane.h, a room above server/net/" \
  'echo "#include \"server/lane/lane.h\"" >> server/net/sent.c'
expect_fail "server: upward call" "calls srv_lane_push (server/lane/lane), a room above server/net/" \
  'printf "void srv_reqid_planted(void)\n{\n    srv_lane_push(0, 0);\n}\n" >> server/net/reqid.c'
expect_fail "server: cycle in the wiring" "cycle of 2 server/ files: server/daemon, server/exchange" \
  'echo "#include \"server/daemon.h\"" >> server/exchange.c'
expect_fail "server: file outside the rooms" "server/util/x.c: not in a room" \
  'mkdir -p server/util && echo "int x;" > server/util/x.c'

lint=tools/lint_messages.py
expect_pass
expect_fail "a message chosen by ? :" "api/request/rows.c:" \
  'printf "void api_rows_planted(struct api_error *e, int c)\n{\n    api_error_hint(e, c ? \"a\" : \"b\");\n}\n" >> api/request/rows.c'
expect_fail "an uncatalogued message" "says \"planted sentence\", which" \
  'printf "void api_rows_planted(struct api_error *e)\n{\n    api_error_hint(e, \"planted sentence\");\n}\n" >> api/request/rows.c'

echo "lint self-test: $passed passed, $failed failed"
[ $failed -eq 0 ]
