# attnd — one non-recursive Makefile. Objects go under $(BUILD_DIR); `make help` lists targets.
#
#   make run         install missing Debian packages (as root), build, serve on 127.0.0.1:8080
#   make test        the whole suite: unit (core, api), HTTP, README examples
#   make asan        the unit and HTTP suites built with AddressSanitizer + UBSan
#   make valgrind    the unit suites under valgrind (CK_FORK=no)
#
# Variables: BUILD_DIR (build), SANITIZER (e.g. address,undefined), PORT (8080), ARGS.

VERSION   := 0.1.0
BUILD_ID  := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
BUILD_DIR ?= build
SANITIZER ?=
PORT      ?= 8080
ARGS      ?=

CC  ?= cc
CXX ?= c++

WARN     := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wformat=2
OPT      := -O2 -g
SAN      := $(if $(SANITIZER),-fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all)
CPPFLAGS := -I. -D_POSIX_C_SOURCE=200809L -DATTND_VERSION='"$(VERSION)"' -DATTND_BUILD='"$(BUILD_ID)"'
CFLAGS   := -std=c11 $(OPT) $(WARN) -Wstrict-prototypes -MMD -MP $(SAN)
# dragonbox (shortest round-trip digits) is a C++17 header; one shim file uses it.
CXXFLAGS := -std=c++17 $(OPT) $(WARN) -fno-exceptions -fno-rtti -MMD -MP $(SAN) \
            -isystem /usr/include/dragonbox-1.1.3
LDFLAGS  := $(SAN)
LDLIBS   := -lmicrohttpd -ljansson -lopenblas -lm -lstdc++
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread -lm)

CORE_SRC   := $(wildcard core/*.c)
API_SRC    := $(wildcard api/*.c)
API_CXX    := $(wildcard api/*.cc)
SERVER_SRC := $(wildcard server/*.c)

CORE_OBJ   := $(CORE_SRC:%.c=$(BUILD_DIR)/%.o)
API_OBJ    := $(API_SRC:%.c=$(BUILD_DIR)/%.o) $(API_CXX:%.cc=$(BUILD_DIR)/%.o) $(BUILD_DIR)/gen/embedded.o
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD_DIR)/%.o)

ATTND      := $(BUILD_DIR)/attnd
UNIT_TESTS := $(BUILD_DIR)/tests/check_core $(BUILD_DIR)/tests/check_api

.PHONY: all run test unit http spec-lint asan valgrind lint deps deps-test clean help

# Build the server binary.
all: $(ATTND)

# Install missing Debian packages (as root), build, and serve on 127.0.0.1:$(PORT).
run: deps
	$(MAKE) all
	$(ATTND) --port $(PORT) $(ARGS)

# Install (as root) or name the Debian packages needed to build and serve.
deps:
	@tools/deps.sh build

# Install (as root) or name the Debian packages needed by the test suite.
deps-test:
	@tools/deps.sh test

# The whole suite: layer lint, spec lint, unit tests, HTTP tests (README examples included).
test: deps-test
	$(MAKE) lint spec-lint unit http

# Check unit suites: core math against the seeds and the naive reference; api without a network.
unit: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== $$t"; $$t; done

# HTTP tests: the built attnd on a free port over real HTTP (Node's test runner), README examples too.
http: $(ATTND)
	ATTND_BIN=$(abspath $(ATTND)) node --test --test-concurrency=1 tests/http/

# Lint api/openapi.yaml and check it against the OpenAPI 3.1 meta-schema (npm tools, pinned).
spec-lint: node_modules/.package-lock.json
	tests/spec/lint.sh

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund

# The unit and HTTP suites built with AddressSanitizer and UBSan, in build/asan.
asan: deps-test
	$(MAKE) BUILD_DIR=build/asan SANITIZER=address,undefined unit http

# The unit suites under valgrind: 0 errors, nothing definitely lost.
valgrind: $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do echo "== valgrind $$t"; \
	  CK_FORK=no valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite $$t; done

# Keep the layers clean: core/ knows no JSON or HTTP, api/ no sockets, server/ no math.
lint:
	@tools/lint_layers.sh

# Remove every build product.
clean:
	rm -rf build

# List the targets with their one-line comments.
help:
	@awk '/^# /{c=substr($$0,3)} /^[a-z-]+:/{sub(":.*","",$$1); if(c!="") printf "  %-16s %s\n",$$1,c; c=""}' Makefile

# ---- build rules ----

$(ATTND): $(SERVER_OBJ) $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD_DIR)/tests/check_core: $(BUILD_DIR)/tests/check_core.o $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/tests/check_api: $(BUILD_DIR)/tests/check_api.o $(API_OBJ) $(CORE_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD_DIR)/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

# Files served by the binary (the spec, its JSON form) are linked in with .incbin.
$(BUILD_DIR)/gen/openapi.json: api/openapi.yaml tools/yaml2json.py
	@mkdir -p $(@D)
	/usr/bin/python3 tools/yaml2json.py $< $@

$(BUILD_DIR)/gen/embedded.o: api/embedded.S api/openapi.yaml $(BUILD_DIR)/gen/openapi.json
	@mkdir -p $(@D)
	$(CC) -c -I$(BUILD_DIR)/gen -I. -o $@ $<

-include $(shell find $(BUILD_DIR) -name '*.d' 2>/dev/null)
