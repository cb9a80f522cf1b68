#!/usr/bin/env bash
# tests/container/run.sh — the Docker image, built and run for real (podman; no Docker
# engine and no registry needed).
#
#   1. lint docker/Dockerfile (dockerfile-utils: any finding fails) and docker/compose.yaml
#   2. make the debian:bookworm and debian:bookworm-slim base images with debootstrap,
#      unless podman already has them (no registry is reachable here)
#   3. build the image (docker format, so HEALTHCHECK is kept); its build stage runs
#      `make unit`
#   4. run it with host networking on free loopback ports; check /healthz, the seed 000
#      example's exact weights, /metrics, the admin port (/healthz, /readyz, /metrics, and
#      nothing else), the HEALTHCHECK (on the admin port), the image's settings
#      (ATTND_BIND=0.0.0.0, ATTND_ADMIN_PORT=9090, OPENBLAS_NUM_THREADS=1, EXPOSE 8080
#      and 9090) and that attnd is not root
#   5. a second container under --memory 512m: the memory budget follows the limit, and
#      slow clients get 503s instead of getting attnd killed
#   6. the worker count under --cpus 1.5: two workers, from the cgroup's CPU quota
#   7. the Kubernetes manifests on a real engine: docker/k8s's Deployment through
#      `podman kube play` (its env, probes, resources and security contexts; ports
#      moved to loopback by tests/container/kube.mjs), answering /readyz and seed 000,
#      then `podman kube down`
#   8. podman stop (SIGTERM): attnd exits 0 within 10 s
#   9. print the image size
#
# As root (it installs podman, runc and debootstrap when missing). Called by .ci/run and
# `make container`; not by `make test`, which must stay quick and need no podman.
# Prints one line per check and "container: N passed, N failed"; exits 1 on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

IMAGE=${IMAGE:-attnd:ci}
NAME=attnd-ci-$$
W=${PODMAN_WORK:-/tmp/podman-ci}
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { # name, command...: output shown only on failure
  local name=$1; shift
  local out
  if out=$("$@" 2>&1); then ok "$name"; else fail "$name"; printf '%s\n' "$out" | sed 's/^/     /'; fi
}
finish() {
  echo "container: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit $?
}

# ---- 1. lint ----
if [ ! -x node_modules/.bin/dockerfile-utils ]; then
  echo "tests/container/run.sh: run 'npm ci' in $root first" >&2
  exit 1
fi
lint_dockerfile() {
  local out
  out=$(node_modules/.bin/dockerfile-utils lint docker/Dockerfile 2>&1) || { echo "$out"; return 1; }
  [ -z "$out" ] || { echo "$out"; return 1; } # it exits 0 on warnings: any output fails
}
check "dockerfile-utils lint docker/Dockerfile: no findings" lint_dockerfile
check "docker/compose.yaml builds docker/Dockerfile, publishes 8080 and the admin port locally" node -e '
  const y = require("js-yaml").load(require("fs").readFileSync("docker/compose.yaml", "utf8"));
  const s = y.services.attnd, assert = require("assert");
  assert.equal(s.build.dockerfile, "docker/Dockerfile");
  assert.equal(s.build.context, "..");
  assert.ok(s.ports.includes("8080:8080"));
  assert.ok(s.ports.includes("127.0.0.1:9090:9090"), "the admin port, on this machine only");
  assert.equal(s.read_only, true);'

# ---- 2. podman and the base images ----
need=()
for c in podman runc debootstrap; do command -v "$c" >/dev/null || need+=("$c"); done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    fail "podman, runc and debootstrap are needed: sudo apt-get install -y ${need[*]}"
    finish
  fi
  echo "installing: ${need[*]}" >&2
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    podman runc debootstrap >/dev/null
fi
mkdir -p "$W"
# runc: crun fails on this kind of machine's hybrid cgroups. Host networking: no bridge.
cat > "$W/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
netns = "host"
[engine]
runtime = "runc"
CONF
printf '[storage]\ndriver = "overlay"\ngraphroot = "%s/storage"\nrunroot = "%s/run"\n' "$W" "$W" \
  > "$W/storage.conf"
export CONTAINERS_CONF="$W/containers.conf" CONTAINERS_STORAGE_CONF="$W/storage.conf"

if ! podman image exists docker.io/library/debian:bookworm; then
  echo "making debian:bookworm with debootstrap (no registry here; about 40 s)" >&2
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  R="$W/rootfs"
  rm -rf "$R"
  if ! debootstrap --variant=minbase bookworm "$R" "${mirror:-http://deb.debian.org/debian}" \
      > "$W/debootstrap.log" 2>&1; then
    fail "debootstrap bookworm (see $W/debootstrap.log)"
    finish
  fi
  [ -f /etc/apt/sources.list.d/debian.sources ] && cp /etc/apt/sources.list.d/debian.sources "$R/etc/apt/sources.list.d/"
  rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/cache/apt/*.bin "$R"/var/lib/apt/lists/*
  tar --numeric-owner -C "$R" -c . | podman import --change 'CMD ["bash"]' - docker.io/library/debian:bookworm >/dev/null
  podman tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
  rm -rf "$R"
fi

# ---- 3. build ----
build_id=$(git describe --always --dirty 2>/dev/null || echo unknown)
t0=$(date +%s)
if podman build --pull=never --network host --format docker -f docker/Dockerfile \
     --build-arg ATTND_BUILD="$build_id" -t "$IMAGE" . > "$W/build.log" 2>&1; then
  ok "podman build -f docker/Dockerfile ($(( $(date +%s) - t0 )) s)"
else
  fail "podman build -f docker/Dockerfile"
  tail -40 "$W/build.log" | sed 's/^/     /'
  finish
fi
# The unit suites ran in this build, or in an earlier one of the same sources: podman
# reuses a RUN layer only when its inputs (the copied tree included) are identical, and
# commits one only when its command exited 0, so a cached `make ... unit` step passed.
unit_suites_passed() {
  if grep -q 'passed, 0 failed\|100%: Checks' "$W/build.log"; then
    echo "ran and passed in this build"
  elif grep -A1 '^\[1/2\] STEP [0-9/]*: RUN make .* unit$' "$W/build.log" | grep -q '^--> Using cache'; then
    echo "passed in an earlier build of identical sources (cached layer)"
  else
    return 1
  fi
}
if how=$(unit_suites_passed); then
  ok "unit suites in the build stage: $how"
else
  fail "no unit-suite summary and no cached unit step in the build log ($W/build.log)"
fi

inspect() { podman image inspect --format "$1" "$IMAGE"; }
env_has() { inspect '{{range .Config.Env}}{{println .}}{{end}}' | grep -x "$1" >/dev/null; }
check "the image sets ATTND_BIND=0.0.0.0" env_has ATTND_BIND=0.0.0.0
check "the image sets OPENBLAS_NUM_THREADS=1" env_has OPENBLAS_NUM_THREADS=1
check "the image sets ATTND_ADMIN_PORT=9090" env_has ATTND_ADMIN_PORT=9090
check "the image exposes 8080/tcp" bash -c "podman image inspect --format '{{json .Config.ExposedPorts}}' '$IMAGE' | grep -q '8080/tcp'"
check "the image exposes 9090/tcp (admin)" bash -c "podman image inspect --format '{{json .Config.ExposedPorts}}' '$IMAGE' | grep -q '9090/tcp'"
check "the image has a HEALTHCHECK using --probe" bash -c "podman image inspect --format '{{json .Config.Healthcheck}}' '$IMAGE' | grep -q -- '--probe'"
check "the image's user is not root" bash -c "u=\$(podman image inspect --format '{{.Config.User}}' '$IMAGE'); [ -n \"\$u\" ] && [ \"\${u%%:*}\" != 0 ] && [ \"\${u%%:*}\" != root ]"
check "the image's entrypoint is exec-form attnd" bash -c "podman image inspect --format '{{json .Config.Entrypoint}}' '$IMAGE' | grep -qx '\\[\"/usr/local/bin/attnd\"\\]'"
no_toolchain() { podman run --rm --entrypoint /bin/sh "$IMAGE" -c '! command -v cc && ! command -v gcc && ! command -v make'; }
check "the runtime stage has no compiler or make" no_toolchain

size=$(inspect '{{.Size}}')
size_mb=$(awk -v b="$size" 'BEGIN {printf "%.1f", b / 1e6}')
echo "image $IMAGE: $size_mb MB ($size bytes)"

# ---- 4. run ----
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
admin_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() { podman rm -f "$NAME" >/dev/null 2>&1; }
trap cleanup EXIT
# Host networking, bound to loopback only: nothing is published beyond this machine.
if ! podman run -d --name "$NAME" --network host --read-only \
     -e ATTND_PORT="$port" -e ATTND_ADMIN_PORT="$admin_port" -e ATTND_BIND=127.0.0.1 \
     -e ATTND_LOG=json "$IMAGE" >/dev/null 2>"$W/run.log"; then # podman notes there that systemd cannot time the healthcheck
  fail "podman run"
  finish
fi
base="http://127.0.0.1:$port"
up=0
for _ in $(seq 50); do
  curl -fsS "$base/healthz" >/dev/null 2>&1 && { up=1; break; }
  sleep 0.2
done
if [ $up -eq 1 ]; then ok "GET /healthz answers 200 on $base"; else
  fail "GET /healthz never answered"; podman logs "$NAME" 2>&1 | tail -20 | sed 's/^/     /'; finish
fi

seed() {
  curl -fsS "$base/v1/attention" -H 'Content-Type: application/json' \
    -d '{"q":[[1,0,1,0],[0,1,0,1]],"k":[[1,0,1,0],[1,1,1,1]],"v":[[10,0],[0,10]]}' |
  node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const r = JSON.parse(s);
      require("assert").deepStrictEqual(r.weights, [[0.5, 0.5], [0.2689414213699951, 0.7310585786300049]]);
      require("assert").deepStrictEqual(r.output, [[5, 5], [2.6894142136999513, 7.310585786300049]]);
    });'
}
check "POST /v1/attention, seed 000: the exact weights and output" seed
check "GET /readyz is 200" curl -fsS "$base/readyz"
check "GET /metrics counts the seed request" bash -c \
  "curl -fsS '$base/metrics' | grep -q 'attnd_requests_total{route=\"/v1/attention\",status=\"200\"} 1'"
admin="http://127.0.0.1:$admin_port"
check "the admin port answers /healthz, /readyz and /metrics" bash -c \
  "curl -fsS '$admin/healthz' && curl -fsS '$admin/readyz' && curl -fsS '$admin/metrics' | grep -q '^attnd_build_info'"
check "the admin port serves nothing else (404)" bash -c \
  "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$admin/version')\" = 404 ]"
check "GET /version reports the build id $build_id" bash -c "curl -fsS '$base/version' | grep -qF '\"build\":\"$build_id\"'"
not_root() { # attnd's own process, seen from the host: its real, effective, saved uids
  local pid uids
  pid=$(podman inspect --format '{{.State.Pid}}' "$NAME") || return 1
  uids=$(awk '/^Uid:/ {print $2, $3, $4}' "/proc/$pid/status") || return 1
  echo "pid $pid uids $uids"
  [ -n "$uids" ] && ! printf '%s\n' $uids | grep -qx 0
}
check "attnd runs as a non-root user" not_root
check "the HEALTHCHECK (attnd --probe, on the admin port) passes" podman healthcheck run "$NAME"
check "the access log is JSON on stderr" bash -c \
  "podman logs '$NAME' 2>&1 | grep '\"path\":\"/v1/attention\"' | head -1 | node -e 'let s=\"\"; process.stdin.on(\"data\", d => s += d).on(\"end\", () => JSON.parse(s))'"

# ---- the memory budget, under a container memory limit ----
# In a container of 512 MiB the default budget is two thirds of it. Slow clients (curl at
# 50 kB/s) ask for 26 MB answers (multihead, n = 360, from a tiny body): unbounded, 24
# of them would hold over 600 MB and the kernel would kill attnd; within the budget the
# answers it cannot hold are 503 at once, and the process lives on.
MEM_NAME=$NAME-mem
cleanup() { podman rm -f "$NAME" "$MEM_NAME" >/dev/null 2>&1; }
mem_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mem_base="http://127.0.0.1:$mem_port"
mem_up() {
  podman run -d --name "$MEM_NAME" --network host --read-only --memory 512m \
    -e ATTND_PORT="$mem_port" -e ATTND_ADMIN_PORT=off -e ATTND_BIND=127.0.0.1 -e ATTND_LOG=off "$IMAGE" \
    >/dev/null 2>>"$W/run.log" || return 1
  for _ in $(seq 50); do curl -fsS "$mem_base/healthz" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}
mem_budget() {
  local got
  got=$(curl -fsS "$mem_base/metrics" | awk '/^attnd_memory_budget_bytes / {print $2}')
  echo "budget $got"
  [ "$got" = 357913940 ]
}
mem_slow_clients() {
  local dir body i n200 n503 held alive
  dir=$(mktemp -d)
  body='{"heads":2,"random":{"seed":1,"n":360,"d_model":64}}'
  for i in $(seq 24); do
    curl -s --limit-rate 50k -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' \
      -d "$body" "$mem_base/v1/multihead" >"$dir/$i" 2>/dev/null &
  done
  sleep 5
  held=$(curl -fsS "$mem_base/metrics" | awk '/^attnd_memory_held_bytes / {print $2}')
  alive=$(podman inspect --format '{{.State.Running}} {{.State.OOMKilled}}' "$MEM_NAME")
  curl -fsS "$mem_base/healthz" >/dev/null 2>&1 || alive="$alive, /healthz failed"
  n503=$(cat "$dir"/* | grep -c '^503$')
  jobs -p | xargs -r kill 2>/dev/null
  wait 2>/dev/null
  rm -rf "$dir"
  echo "503 answers: $n503 of 24; held $held bytes; running, OOM-killed: $alive"
  [ "$alive" = "true false" ] && [ "$n503" -ge 1 ] && [ "$held" -gt 100000000 ] && [ "$held" -le 400000000 ]
}
if mem_up; then
  check "under --memory 512m the memory budget is 2/3 of it (357913940 bytes)" mem_budget
  check "24 slow clients of 26 MB answers: some 503, attnd alive within its limit" mem_slow_clients
else
  fail "podman run --memory 512m"
fi
podman rm -f "$MEM_NAME" >/dev/null 2>&1

# ---- 6. the worker count from the CPU quota ----
# A container limited to 1.5 CPUs on a machine with any number of them: the quota,
# rounded up, is the default --threads (server/host/cpus.h), and the first log line says so.
CPU_NAME=$NAME-cpu
cleanup() { podman rm -f "$NAME" "$CPU_NAME" >/dev/null 2>&1; }
cpu_workers() {
  local p line
  p=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  podman run -d --name "$CPU_NAME" --network host --read-only --cpus 1.5 \
    -e ATTND_PORT="$p" -e ATTND_ADMIN_PORT=off -e ATTND_BIND=127.0.0.1 -e ATTND_LOG=text "$IMAGE" \
    >/dev/null 2>>"$W/run.log" || return 1
  for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$p/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  line=$(podman logs "$CPU_NAME" 2>&1 | grep 'worker threads')
  podman rm -f "$CPU_NAME" >/dev/null 2>&1
  echo "$line"
  printf '%s\n' "$line" | grep -q "level=info 2 worker threads: the cgroup's CPU quota of 1.50 CPUs, rounded up"
}
check "--cpus 1.5: 2 workers, from the cgroup's CPU quota" cpu_workers

# ---- 7. the Kubernetes manifests, played by podman ----
KUBE=$W/kube-attnd.yaml
kube_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
kube_admin=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cleanup() { # one name at a time: a failure on one must not leave the others behind
  for c in "$NAME" "$CPU_NAME" "$MEM_NAME"; do podman rm -f "$c" >/dev/null 2>&1; done
  [ -f "$KUBE" ] && podman kube down "$KUBE" >/dev/null 2>&1
  return 0
}
kube_render() {
  kubectl kustomize docker/k8s | node tests/container/kube.mjs "localhost/$IMAGE" "$kube_port" "$kube_admin" >"$KUBE"
}
kube_play() {
  podman kube play --network host "$KUBE" >"$W/kube.log" 2>&1 || { cat "$W/kube.log"; return 1; }
  for _ in $(seq 100); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$kube_admin/readyz")" = 200 ] && return 0
    sleep 0.2
  done
  echo "/readyz on the admin port never answered 200"; podman pod ps; return 1
}
kube_ctr() { podman ps --format '{{.Names}}' | grep -m1 -- '-attnd$'; } # the pod's name, then the container's
kube_seed() {
  curl -fsS "http://127.0.0.1:$kube_port/v1/attention" -H 'Content-Type: application/json' \
    -d '{"q":[[1,0,1,0],[0,1,0,1]],"k":[[1,0,1,0],[1,1,1,1]],"v":[[10,0],[0,10]]}' |
  node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const r = JSON.parse(s);
      require("assert").deepStrictEqual(r.weights, [[0.5, 0.5], [0.2689414213699951, 0.7310585786300049]]);
    });'
}
kube_settings() { # the manifest's env and security context, as the engine applied them
  local c pid
  c=$(kube_ctr) || { echo "no attnd container in the pod"; return 1; }
  podman inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$c" | grep -x 'ATTND_LOG=json' || return 1
  podman inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$c" | grep -q '^ATTND_THREADS=' && { echo "ATTND_THREADS set"; return 1; }
  [ "$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$c")" = true ] || { echo "root not read-only"; return 1; }
  pid=$(podman inspect --format '{{.State.Pid}}' "$c")
  awk '/^Uid:/ {print "uids", $2, $3, $4}' "/proc/$pid/status"
  awk '/^Uid:/ {exit !($2 == 10001 && $3 == 10001)}' "/proc/$pid/status"
}
kube_down() {
  podman kube down "$KUBE" >/dev/null 2>&1 || return 1
  ! podman ps -a --format '{{.Names}}' | grep -q -- '-attnd$'
}
if ! kube_render_out=$(kube_render 2>&1) || [ ! -s "$KUBE" ]; then
  fail "kubectl kustomize docker/k8s, made playable on loopback"
  printf '%s\n' "$kube_render_out" | tail -20 | sed 's/^/     /'
elif kube_play_out=$(kube_play 2>&1); then
  ok "podman kube play: the Deployment's pod is ready (/readyz 200 on its admin port)"
  check "the played pod answers seed 000 on its data port" kube_seed
  check "the played pod has the manifest's env (ATTND_LOG=json, no ATTND_THREADS), uid 10001, a read-only root" kube_settings
  check "the played pod's probes pass on the admin port (/healthz)" curl -fsS "http://127.0.0.1:$kube_admin/healthz"
  check "podman kube down removes it" kube_down
else
  fail "podman kube play --network host docker/k8s's Deployment"
  printf '%s\n' "${kube_play_out:-}" | tail -20 | sed 's/^/     /'
  podman kube down "$KUBE" >/dev/null 2>&1
fi

# ---- 8. stop ----
t0=$(date +%s%N)
podman stop -t 10 "$NAME" >/dev/null 2>&1
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
code=$(podman inspect --format '{{.State.ExitCode}}' "$NAME")
if [ "$code" = 0 ] && [ "$ms" -lt 10000 ]; then
  ok "SIGTERM (podman stop): exit 0 after $ms ms"
else
  fail "SIGTERM (podman stop): exit code $code after $ms ms"
  podman logs "$NAME" 2>&1 | tail -5 | sed 's/^/     /'
fi
check "the log says it shut down on SIGTERM" bash -c "podman logs '$NAME' 2>&1 | grep -q 'SIGTERM: shutting down'"

finish
