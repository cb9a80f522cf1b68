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

# The test binaries and what each links beside its own object: a row a binary,
# $(call row,KIND,NAME,LINKS), read by the link rule of its kind (under "build rules").
# KIND  unit   a Check suite, tests/unit/NAME: `make unit` and `make valgrind` run them in
#              the table's order; linked with $(CHECK_LIBS)
#       alloc  likewise, but run alone, by `make alloc` and `make valgrind`
#       fuzz   a libFuzzer harness, tests/fuzz/NAME, linked with -fsanitize=fuzzer; every
#              tests/fuzz/fuzz_*.c is one, and one without a row links api
#       bench  a program of `make bench`, bench/NAME
# LINKS core   core/'s objects, and $(LDLIBS)
#       api    api/'s and core/'s objects, and $(LDLIBS)
#       a/b    the object $(BUILD_DIR)/a/b.o
#       -lx    that library, after every object
#       wrap   ld --wrap of malloc, calloc, realloc and free: the test's own allocator in
#              front of the production objects, which are linked unchanged
row = $(eval rows.$1 += $2)$(eval links.$2 := $3)

# core/: attention against the seeds' examples, the naive reference, the numeric limits
# and bad input; softmax's vectorized row against its scalar baseline.
$(call row,unit,check_core,        core tests/unit/softmax_row_baseline)
# The attention variants against independent values and the reference.
$(call row,unit,check_variants,    core)
# The streamed pass against attn_forward and attn_forward_variants.
$(call row,unit,check_stream,      core)
# The streamed multi-head pass and the listed-rows copies.
$(call row,unit,check_mh_stream,   core)
# Generation with a KV cache: one query against a naive loop, every token against the full pass.
$(call row,unit,check_decode,      core)
# The masks of training and the block map against a naive loop and the paths' answers.
$(call row,unit,check_masks,       core)
# The backward pass against finite differences of the naive reference.
$(call row,unit,check_backward,    core)
# Multi-head's gradients through the projections, against finite differences.
$(call row,unit,check_mh_backward, core)
# core/precision.c: the formats' rounding and attention (forward and backward, one head
# and multi-head) by the precision rules, against an emulation that rounds by search over every float16 and
# bfloat16 value.
$(call row,unit,check_precision,   core)
# core/verify.c: the rules that judge a kernel's answer, recomputed from their formulas.
$(call row,unit,check_verify,      core)
# The api suites, a binary per module of api/ (tests/unit/check_<module>.c), with the
# fixture they share (tests/unit/api_fixture.c).
$(call row,unit,check_json_read,   tests/unit/api_fixture api)
$(call row,unit,check_json_write,  tests/unit/api_fixture api)
$(call row,unit,check_json_arena,  tests/unit/api_fixture api)
$(call row,unit,check_numparse,    tests/unit/api_fixture api)
$(call row,unit,check_request,     tests/unit/api_fixture api)
$(call row,unit,check_attention,   tests/unit/api_fixture api)
$(call row,unit,check_router,      tests/unit/api_fixture api)
$(call row,unit,check_admission,   tests/unit/api_fixture api)
$(call row,unit,check_two_threads, tests/unit/api_fixture api)
$(call row,unit,check_teach,       tests/unit/api_fixture api)
# Errors that teach, and their languages.
$(call row,unit,check_errors,      tests/unit/api_fixture api)
$(call row,unit,check_lang,        tests/unit/api_fixture api)
# The server's own problems and the JSON reader's words, in the request's language.
$(call row,unit,check_lang_server, tests/unit/api_fixture api)
# The renderings, multi-head attention and the number printer: no fixture.
$(call row,unit,check_render,      api)
$(call row,unit,check_multihead,   api)
$(call row,unit,check_numfmt,      api)
# The V2 readers and answers.
$(call row,unit,check_v2,          api)
# The V2 working set against the bytes a request really allocates (wrap, as check_alloc).
$(call row,unit,check_v2_memory,   api wrap)
# server/ops/metrics.c over api/'s routes.
$(call row,unit,check_metrics,     server/ops/metrics api)
# server/lane/lane.c and server/lane/queue.c, with the counters they keep (server/ops/metrics.c,
# which labels them by api/'s routes).
$(call row,unit,check_lane,        server/lane/lane server/lane/queue server/ops/metrics \
                                   server/host/clock api -lpthread)
# api/json/utf8.h, the one UTF-8 decoder, against a reference encoder, and its four callers,
# server/ops/log.c's escaper among them.
$(call row,unit,check_utf8,        server/ops/log api)
# server/net/trace.c (traceparent), and api/http/instance.c (a problem's instance) over
# api/http/response.c.
$(call row,unit,check_trace,       server/net/trace api/http/instance api/http/response api/json/segments)
# server/net/upload.c and server/host/budget.c, with the cgroup walk.
$(call row,unit,check_body,        server/net/upload server/host/budget server/host/cgroup)
# server/codec/coding.c and server/codec/inflate.c (Content-Encoding, Accept-Encoding, coded
# bodies) over net/upload.c and host/budget.c, with zlib to make the streams.
$(call row,unit,check_inflate,     server/codec/coding server/codec/inflate server/net/upload \
                                   server/host/budget server/host/cgroup -lz)
# server/host/cpus.c: the cgroup CPU quota on fake cgroup trees.
$(call row,unit,check_cpus,        server/host/cpus server/host/cgroup)
# server/ops/process.c: the process_* series' reader on a fake /proc.
$(call row,unit,check_process,     server/ops/process)
# server/net/framing.c: pure functions over header lists and targets.
$(call row,unit,check_framing,     server/net/framing)
# server/net/clients.c and server/net/cors.c, each alone.
$(call row,unit,check_clients,     server/net/clients)
$(call row,unit,check_cors,        server/net/cors)
# Every allocation of a request fails in turn (wrap).
$(call row,alloc,check_alloc,      api wrap)
# The harnesses of server/ parts, each with what it needs alone.
$(call row,fuzz,fuzz_framing,      server/net/framing)
$(call row,fuzz,fuzz_inflate,      server/codec/coding server/codec/inflate server/net/upload \
                                   server/host/budget server/host/cgroup -lz)
$(call row,fuzz,fuzz_trace,        server/net/trace server/host/config)
# The libmicrohttpd floor, and the in-process core/JSON bench on the production objects.
$(call row,bench,floor,            -lmicrohttpd)
$(call row,bench,core_bench,       api)
# The exp section: attnd's vectorized exp against SLEEF's (when libsleef-dev is installed)
# and glibc's.
SLEEF_FLAGS := $(shell pkg-config --exists sleef 2>/dev/null && echo -DHAVE_SLEEF)
$(call row,bench,exp_bench,        core/softmax_row $(if $(SLEEF_FLAGS),-lsleef) -lm)

UNIT_TESTS := $(rows.unit:%=$(BUILD_DIR)/tests/unit/%)
ALLOC_TEST := $(rows.alloc:%=$(BUILD_DIR)/tests/unit/%)
FUZZERS    := $(patsubst %.c,$(BUILD_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))
BENCHES    := $(rows.bench:%=$(BUILD_DIR)/bench/%)
# A harness without a row links api.
$(foreach f,$(notdir $(FUZZERS)),$(if $(filter $f,$(rows.fuzz)),,$(eval links.$f := api)))

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
	$(MAKE) all $(BENCHES)
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

# The test binaries, a link rule a kind. Each links its own object and what its row in the
# table (at the top) names: the objects first (objs.core and objs.api for those words, a
# path's object for a path), then the libraries (libs.core, libs.api, the -lx words); wrap
# is a flag.
objs.core  := $(CORE_OBJ)
objs.api   := $(API_OBJ) $(CORE_OBJ)
libs.core  := $(LDLIBS)
libs.api   := $(LDLIBS)
WRAP_LDFLAGS := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free
link_objs  = $(foreach w,$(links.$1),$(if $(filter core api wrap -l%,$w),$(objs.$w),$(BUILD_DIR)/$w.o))
link_libs  = $(foreach w,$(links.$1),$(if $(filter -l%,$w),$w,$(libs.$w)))
link_flags = $(if $(filter wrap,$(links.$1)),$(WRAP_LDFLAGS))
$(foreach b,$(UNIT_TESTS) $(ALLOC_TEST) $(FUZZERS) $(BENCHES),$(eval $b: $(call link_objs,$(notdir $b))))

$(UNIT_TESTS) $(ALLOC_TEST): %: %.o
	$(CC) $(LDFLAGS) $(call link_flags,$(@F)) -o $@ $^ $(CHECK_LIBS) $(call link_libs,$(@F))

.PRECIOUS: $(BUILD_DIR)/tests/fuzz/%.o
$(FUZZERS): %: %.o
	$(CC) $(LDFLAGS) -fsanitize=fuzzer $(call link_flags,$(@F)) -o $@ $^ $(call link_libs,$(@F))

$(BENCHES): %: %.o
	$(CC) $(LDFLAGS) $(call link_flags,$(@F)) -o $@ $^ $(call link_libs,$(@F))

# SLEEF_FLAGS: beside exp_bench's row.
$(BUILD_DIR)/bench/exp_bench.o: CFLAGS += $(SLEEF_FLAGS)

# Softmax's per-element loops are written to be vectorized: -O2 leaves them scalar, and
# without -fno-trapping-math a comparison (which may raise a flag) cannot become a select;
# no fused multiply-add, so that every target computes the same bits (GCC in ISO mode
# fuses nothing anyway; clang would).
$(BUILD_DIR)/core/softmax_row.o $(BUILD_DIR)/tests/unit/softmax_row_baseline.o: \
    CFLAGS += -O3 -fno-trapping-math -ffp-contract=off

# The low formats' float32 sums (core/precision.c), eight fmaf lanes a step: -O2 leaves the
# loop scalar. No contraction: every fused multiply-add there is an fmaf the rules name.
$(BUILD_DIR)/core/precision.o: CFLAGS += -O3 -ffp-contract=off
$(BUILD_DIR)/core/precision_backward.o: CFLAGS += -ffp-contract=off

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
