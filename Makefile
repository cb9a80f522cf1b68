# attnd — one non-recursive Makefile. Objects go under $(BUILD_DIR). `make help` lists the
# targets: the line marked ## above each is its one description (README.md shows the list).
#
# Variables: BUILD_DIR (build), SANITIZER (e.g. address,undefined), PORT (8080), ARGS,
# FUZZ_SECONDS (30), BENCH_SECONDS (5: each wrk run of `make bench`), DRAGONBOX_INCLUDE
# (found under /usr/include).

VERSION   := 0.1.0
BUILD_ID  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
BUILD_DIR ?= build
SANITIZER ?=
PORT      ?= 8080
ARGS      ?=
FUZZ_SECONDS ?= 30
BENCH_SECONDS ?= 5

CC  ?= cc
CXX ?= c++

WARN     := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wformat=2
OPT      := -O2 -g
SAN      := $(if $(SANITIZER),-fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all)
CPPFLAGS := -I. -D_POSIX_C_SOURCE=200809L
CFLAGS   := -std=c11 $(OPT) $(WARN) -Wstrict-prototypes -MMD -MP $(SAN)
# dragonbox (shortest round-trip digits) and fast_float (correctly rounded reading)
# are C++ headers; api/json/numfmt.cc and api/json/numparse.cc wrap them for the C code.
# Debian's libdragonbox-dev puts its headers in a folder named by version: the newest
# one found, unless DRAGONBOX_INCLUDE says where.
DRAGONBOX_INCLUDE ?= $(lastword $(sort $(wildcard /usr/include/dragonbox-*)))
CXXFLAGS := -std=c++17 $(OPT) $(WARN) -fno-exceptions -fno-rtti -MMD -MP $(SAN) \
            $(if $(DRAGONBOX_INCLUDE),-isystem $(DRAGONBOX_INCLUDE))
LDFLAGS  := $(SAN)
LDLIBS   := -lmicrohttpd -ljansson -lopenblas -lz -lm -lstdc++
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread -lm)

CORE_SRC   := $(wildcard core/*.c)
API_SRC    := $(wildcard api/*.c api/*/*.c api/endpoints/*/*.c)
API_CXX    := $(wildcard api/*/*.cc)
SERVER_SRC := $(wildcard server/*.c server/*/*.c)

CORE_OBJ   := $(CORE_SRC:%.c=$(BUILD_DIR)/%.o)
API_OBJ    := $(API_SRC:%.c=$(BUILD_DIR)/%.o) $(API_CXX:%.cc=$(BUILD_DIR)/%.o) $(BUILD_DIR)/gen/embedded.o \
              $(BUILD_DIR)/gen/version.o
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD_DIR)/%.o) $(BUILD_DIR)/gen/www.o

ATTND      := $(BUILD_DIR)/attnd
# The api suites, one binary per module of api/ (tests/unit/check_<module>.c), each linked
# with the api/ and core/ objects and the fixture they share (tests/unit/api_fixture.c).
API_SUITES := check_json_read check_json_write check_json_arena check_numparse check_request \
              check_attention check_router check_admission check_two_threads check_teach
# Errors that teach (tests/unit/check_errors.c) and their languages (check_lang.c).
API_SUITES += check_errors check_lang
# The server's own problems and the JSON reader's words, in the request's language.
API_SUITES += check_lang_server
UNIT_TESTS := $(addprefix $(BUILD_DIR)/tests/unit/,check_core $(API_SUITES) check_render \
                check_multihead check_metrics check_body check_numfmt check_framing check_clients \
                check_lane check_cors)
# server/codec/coding.c and server/codec/inflate.c (Content-Encoding, Accept-Encoding, coded bodies).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_inflate
# api/json/utf8.h, the one UTF-8 decoder, against a reference encoder.
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_utf8
# The V2 readers and answers (tests/unit/check_v2.c).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_v2
# server/net/trace.c (traceparent) and api/http/instance.c (a problem's instance).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_trace
# server/host/cpus.c: the cgroup CPU quota on fake cgroup trees.
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_cpus
# server/ops/process.c: the process_* series' reader on a fake /proc.
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_process
# The V2 working set against the bytes a request really allocates (ld --wrap, as alloc).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_v2_memory
# The attention variants against independent values and the reference (tests/unit/check_variants.c).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_variants
# The streamed pass against attn_forward and attn_forward_variants (tests/unit/check_stream.c).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_stream
# The streamed multi-head pass and the listed-rows copies (tests/unit/check_mh_stream.c).
UNIT_TESTS += $(BUILD_DIR)/tests/unit/check_mh_stream
ALLOC_TEST := $(BUILD_DIR)/tests/unit/check_alloc
FUZZERS    := $(patsubst %.c,$(BUILD_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))

.PHONY: all check run test unit http spec-lint asan valgrind lint deps deps-test clean help \
        fuzz fuzzers alloc tsan load abuse faults browser bench deps-bench contract k8s container

## build build/attnd (`make` alone does the same)
all: $(ATTND)

## the layer lint and the unit suites: no root, no network
check: lint unit

## install missing packages, build, serve on :8080 (PORT=, ARGS= to change)
run: deps
	$(MAKE) all
	$(ATTND) --port $(PORT) $(ARGS)

## install (as root) or name the Debian packages to build and serve
deps:
	@tools/deps.sh build

## install (as root) or name the Debian packages the tests need
deps-test:
	@tools/deps.sh test

## the whole suite: lint, spec lint, unit, HTTP (these examples), contract, k8s, browser
test: deps-test
	$(MAKE) lint spec-lint unit http contract k8s browser

# Check's timeout is a hang guard in wall-clock time (4 s a test): on a machine shared with
# other work a suite can wait that long for a CPU, so it is ten times that here, as in
# docker/Dockerfile, unless the caller says otherwise.
## the Check suites, a binary per module (tests/unit/check_<module>.c): core, api/ room by room, server/ parts
unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; \
	  CK_TIMEOUT_MULTIPLIER=$${CK_TIMEOUT_MULTIPLIER:-10} $$t; done

## tests/http/*.test.mjs: the real binary on a free port; every answer checked against api/openapi.yaml
http: $(ATTND)
	ATTND_BIN=$(abspath $(ATTND)) ATTND_SANITIZER=$(SANITIZER) node --test --test-concurrency=1 tests/http/

## Redocly lint and the OpenAPI 3.1 meta-schema on api/openapi.yaml
spec-lint: node_modules/.package-lock.json
	tests/spec/lint.sh

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

## tests/contract/: 600 requests from the spec's schemas and junk (CONTRACT_RUNS=, CONTRACT_SEED=)
contract: $(ATTND) node_modules/.package-lock.json
	ATTND_BIN=$(abspath $(ATTND)) node --test tests/contract/

## tests/k8s/: kubectl kustomize docker/k8s and docker/kserve, each object checked against its schema
k8s: node_modules/.package-lock.json
	node --test tests/k8s/

## tests/container/run.sh: lint, build and run the image, probe it, play docker/k8s with podman kube play, SIGTERM (root, ~3 min)
container: node_modules/.package-lock.json
	tests/container/run.sh

## tests/browser/: the playground and CORS in Debian's chromium (playwright-core)
browser: $(ATTND) node_modules/.package-lock.json
	ATTND_BIN=$(abspath $(ATTND)) ATTND_ARTIFACTS=$(abspath $(BUILD_DIR))/artifacts \
	  node --test --test-concurrency=1 tests/browser/

## the unit and HTTP suites with AddressSanitizer + UBSan (build/asan)
asan: deps-test
	$(MAKE) BUILD_DIR=build/asan SANITIZER=address,undefined unit http

## the unit suites and tests/unit/check_alloc.c under valgrind: 0 errors, nothing definitely lost
valgrind: $(UNIT_TESTS) $(ALLOC_TEST)
	@set -e; for t in $(UNIT_TESTS) $(ALLOC_TEST); do echo "== valgrind $$t"; \
	  CK_FORK=no ATTND_TEST_QUICK=1 valgrind -q --error-exitcode=1 --leak-check=full \
	    --errors-for-leak-kinds=definite $$t; done

## the libFuzzer harnesses of tests/fuzz/ for FUZZ_SECONDS (30) each
fuzz: deps-test
	$(MAKE) BUILD_DIR=build/fuzz CC=clang CXX=clang++ SANITIZER=fuzzer-no-link,address,undefined fuzzers
	tests/fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

## build the fuzz harnesses (`make fuzz` sets the compiler and sanitizers)
fuzzers: $(FUZZERS)

## tests/unit/check_alloc.c under ASan + LSan: every allocation of a request fails in turn
alloc: deps-test
	$(MAKE) BUILD_DIR=build/asan SANITIZER=address,undefined build/asan/tests/unit/check_alloc
	CK_FORK=no build/asan/tests/unit/check_alloc

## the HTTP suite against a ThreadSanitizer build (build/tsan)
tsan: deps-test
	TSAN_OPTIONS="suppressions=$(abspath tests/tsan.supp) second_deadlock_stack=1" \
	  $(MAKE) BUILD_DIR=build/tsan SANITIZER=thread http

## tests/load/: wrk at 64 connections for 20 s, then SIGTERM under load
load: deps-test all
	tests/load/run.sh $(ATTND)

## tests/abuse/: slow headers and bodies, connection floods, every slot taken, a 703 MB answer, the lane, the n = 32,768 request
abuse: all node_modules/.package-lock.json
	ATTND_BIN=$(abspath $(ATTND)) node --test --test-concurrency=1 --test-timeout=120000 tests/abuse/

## tests/faults/: two replicas behind HAProxy under load: rolling restart, SIGKILL, drain
faults: deps-test all
	ATTND_BIN=$(abspath $(ATTND)) node --test --test-concurrency=1 --test-timeout=180000 tests/faults/

## docs/performance.md's benchmarks (BENCH_SECONDS= per run)
bench: deps-bench
	$(MAKE) all $(BUILD_DIR)/bench/floor $(BUILD_DIR)/bench/core_bench $(BUILD_DIR)/bench/exp_bench
	BENCH_SECONDS=$(BENCH_SECONDS) bench/run.sh $(BUILD_DIR)

## install (as root) or name the Debian packages `make bench` needs
deps-bench:
	@tools/deps.sh bench

## the layer boundaries, api/'s one-way doors, no cycle, every message catalogued
lint:
	@tools/lint_layers.sh
	@/usr/bin/python3 tools/lint_rooms.py
	@/usr/bin/python3 tools/lint_messages.py
	@tests/lint/run.sh

## remove every build product
clean:
	rm -rf build

## this list: the line marked ## above each target
help:
	@awk '/^## /{c=substr($$0,4)} /^[a-z0-9-]+:/{sub(":.*","",$$1); if(c!="") printf "  %-12s %s\n",$$1,c; c=""}' Makefile

# ---- build rules ----

$(ATTND): $(SERVER_OBJ) $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD_DIR)/tests/unit/check_core: $(BUILD_DIR)/tests/unit/check_core.o $(CORE_OBJ) \
                               $(BUILD_DIR)/tests/unit/softmax_row_baseline.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/tests/unit/check_variants: $(BUILD_DIR)/tests/unit/check_variants.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/tests/unit/check_stream: $(BUILD_DIR)/tests/unit/check_stream.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/tests/unit/check_mh_stream: $(BUILD_DIR)/tests/unit/check_mh_stream.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(API_SUITES:%=$(BUILD_DIR)/tests/unit/%): $(BUILD_DIR)/tests/unit/%: $(BUILD_DIR)/tests/unit/%.o \
                                         $(BUILD_DIR)/tests/unit/api_fixture.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# The renderings, multi-head attention and the number printer: api/ and core/, no fixture.
$(BUILD_DIR)/tests/unit/check_render $(BUILD_DIR)/tests/unit/check_multihead \
$(BUILD_DIR)/tests/unit/check_numfmt: $(BUILD_DIR)/tests/unit/%: $(BUILD_DIR)/tests/unit/%.o \
                                      $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/tests/unit/check_v2: $(BUILD_DIR)/tests/unit/check_v2.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# server/ops/metrics.c over api/'s routes.
$(BUILD_DIR)/tests/unit/check_metrics: $(BUILD_DIR)/tests/unit/check_metrics.o $(BUILD_DIR)/server/ops/metrics.o \
                                       $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# server/net/upload.c and server/host/budget.c (with the cgroup walk), likewise.
$(BUILD_DIR)/tests/unit/check_body: $(BUILD_DIR)/tests/unit/check_body.o $(BUILD_DIR)/server/net/upload.o \
                               $(BUILD_DIR)/server/host/budget.o $(BUILD_DIR)/server/host/cgroup.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/codec/coding.c and server/codec/inflate.c over net/upload.c and host/budget.c, with zlib to make the streams.
$(BUILD_DIR)/tests/unit/check_inflate: $(BUILD_DIR)/tests/unit/check_inflate.o \
        $(BUILD_DIR)/server/codec/coding.o $(BUILD_DIR)/server/codec/inflate.o $(BUILD_DIR)/server/net/upload.o \
        $(BUILD_DIR)/server/host/budget.o $(BUILD_DIR)/server/host/cgroup.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) -lz

# server/net/trace.c, and api/http/instance.c over api/http/response.c.
$(BUILD_DIR)/tests/unit/check_trace: $(BUILD_DIR)/tests/unit/check_trace.o $(BUILD_DIR)/server/net/trace.o \
                                     $(BUILD_DIR)/api/http/instance.o $(BUILD_DIR)/api/http/response.o \
                                     $(BUILD_DIR)/api/json/segments.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/ops/process.c alone.
$(BUILD_DIR)/tests/unit/check_process: $(BUILD_DIR)/tests/unit/check_process.o $(BUILD_DIR)/server/ops/process.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/host/cpus.c with the cgroup walk.
$(BUILD_DIR)/tests/unit/check_cpus: $(BUILD_DIR)/tests/unit/check_cpus.o $(BUILD_DIR)/server/host/cpus.o \
                                    $(BUILD_DIR)/server/host/cgroup.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/net/framing.c alone: pure functions over header lists and targets.
$(BUILD_DIR)/tests/unit/check_framing: $(BUILD_DIR)/tests/unit/check_framing.o $(BUILD_DIR)/server/net/framing.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/net/clients.c alone, likewise.
$(BUILD_DIR)/tests/unit/check_clients: $(BUILD_DIR)/tests/unit/check_clients.o $(BUILD_DIR)/server/net/clients.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/net/cors.c alone, likewise.
$(BUILD_DIR)/tests/unit/check_cors: $(BUILD_DIR)/tests/unit/check_cors.o $(BUILD_DIR)/server/net/cors.o
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS)

# server/lane/lane.c and server/lane/queue.c, with the counters they keep (server/ops/metrics.c,
# which labels them by api/'s routes).
$(BUILD_DIR)/tests/unit/check_lane: $(BUILD_DIR)/tests/unit/check_lane.o $(BUILD_DIR)/server/lane/lane.o \
                                    $(BUILD_DIR)/server/lane/queue.o $(BUILD_DIR)/server/ops/metrics.o \
                                    $(BUILD_DIR)/server/host/clock.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS) -lpthread

# api/json/utf8.h and its four callers, server/ops/log.c's escaper among them.
$(BUILD_DIR)/tests/unit/check_utf8: $(BUILD_DIR)/tests/unit/check_utf8.o $(BUILD_DIR)/server/ops/log.o \
                                    $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

# The allocation-failure test replaces malloc, calloc and realloc at link time (ld --wrap):
# the production objects are linked unchanged.
$(ALLOC_TEST): $(BUILD_DIR)/tests/unit/check_alloc.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/tests/unit/check_v2_memory: $(BUILD_DIR)/tests/unit/check_v2_memory.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

.PRECIOUS: $(BUILD_DIR)/tests/fuzz/%.o
# The framing harness needs server/net/framing.c alone (the rule below is the more specific).
$(BUILD_DIR)/tests/fuzz/fuzz_framing: $(BUILD_DIR)/tests/fuzz/fuzz_framing.o $(BUILD_DIR)/server/net/framing.o
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^

$(BUILD_DIR)/tests/fuzz/fuzz_inflate: $(BUILD_DIR)/tests/fuzz/fuzz_inflate.o $(BUILD_DIR)/server/codec/coding.o \
        $(BUILD_DIR)/server/codec/inflate.o $(BUILD_DIR)/server/net/upload.o $(BUILD_DIR)/server/host/budget.o \
        $(BUILD_DIR)/server/host/cgroup.o
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ -lz

$(BUILD_DIR)/tests/fuzz/fuzz_trace: $(BUILD_DIR)/tests/fuzz/fuzz_trace.o $(BUILD_DIR)/server/net/trace.o \
        $(BUILD_DIR)/server/host/config.o
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^

$(BUILD_DIR)/tests/fuzz/fuzz_%: $(BUILD_DIR)/tests/fuzz/fuzz_%.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# Bench binaries: the libmicrohttpd floor, and the in-process core/JSON bench on the production objects.
$(BUILD_DIR)/bench/floor: $(BUILD_DIR)/bench/floor.o
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd

$(BUILD_DIR)/bench/core_bench: $(BUILD_DIR)/bench/core_bench.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The exp section: attnd's vectorized exp against SLEEF's (when libsleef-dev is installed) and glibc's.
SLEEF_FLAGS := $(shell pkg-config --exists sleef 2>/dev/null && echo -DHAVE_SLEEF)
$(BUILD_DIR)/bench/exp_bench.o: CFLAGS += $(SLEEF_FLAGS)
$(BUILD_DIR)/bench/exp_bench: $(BUILD_DIR)/bench/exp_bench.o $(BUILD_DIR)/core/softmax_row.o
	$(CC) $(LDFLAGS) -o $@ $^ $(if $(SLEEF_FLAGS),-lsleef) -lm

# Softmax's per-element loops are written to be vectorized: -O2 leaves them scalar, and
# without -fno-trapping-math a comparison (which may raise a flag) cannot become a select;
# no fused multiply-add, so that every target computes the same bits (GCC in ISO mode
# fuses nothing anyway; clang would).
$(BUILD_DIR)/core/softmax_row.o $(BUILD_DIR)/tests/unit/softmax_row_baseline.o: \
    CFLAGS += -O3 -fno-trapping-math -ffp-contract=off

# The number formatter, the hot loop of large answers: a row 3-6% faster at -O3.
$(BUILD_DIR)/api/json/numfmt.o: CXXFLAGS += -O3

$(BUILD_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD_DIR)/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

# The version and build id, rewritten only when they change (api/endpoints/version.h says why).
$(BUILD_DIR)/gen/version.c: FORCE
	@mkdir -p $(@D)
	@printf 'const char attnd_version[] = "%s";\nconst char attnd_build[] = "%s";\n' \
	  '$(VERSION)' '$(BUILD_ID)' > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

$(BUILD_DIR)/gen/version.o: $(BUILD_DIR)/gen/version.c
	$(CC) $(CFLAGS) -c -o $@ $<

.PHONY: FORCE
FORCE:

# Files served by the binary (the spec, its JSON form) are linked in with .incbin.
$(BUILD_DIR)/gen/openapi.json: api/openapi.yaml tools/yaml2json.py
	@mkdir -p $(@D)
	/usr/bin/python3 tools/yaml2json.py $< $@

$(BUILD_DIR)/gen/embedded.o: api/embedded.S api/openapi.yaml $(BUILD_DIR)/gen/openapi.json
	@mkdir -p $(@D)
	$(CC) -c -I$(BUILD_DIR)/gen -I. -o $@ $<

# The playground page (server/www/) is linked in the same way.
$(BUILD_DIR)/gen/www.o: server/www.S $(wildcard server/www/*)
	@mkdir -p $(@D)
	$(CC) -c -I. -o $@ $<

-include $(shell find $(BUILD_DIR) -name '*.d' 2>/dev/null)
