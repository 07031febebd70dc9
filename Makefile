# Build, run and test the process-context collector components.
# Every target installs what it needs (Go modules; later the ocb builder).

GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
BIN       := bin
FUZZTIME  ?= 60s
SMOKETIME ?= 10000x
GOLANGCI  := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
BUILDER   := $(GOBIN)/builder
BUILDER_VERSION := v0.165.0
COLLECTOR := $(BIN)/otelcol-processctx
# The collector's OCI image (make image; Containerfile).
IMAGE     ?= localhost/otelcol-processctx:0.1.0
GO_SOURCES := $(shell find . -name '*.go' -not -path './_build/*') go.mod go.sum

# package:target pairs of every Go fuzz target
FUZZ_TARGETS := \
	./internal/otep:FuzzParseMapsLine \
	./internal/otep:FuzzParseHeader \
	./internal/otep:FuzzDecodePayload \
	./internal/procevents:FuzzParseEvent \
	./processor/processctxprocessor:FuzzPidAttribute \
	./internal/procfs:FuzzCgroup \
	./internal/procfs:FuzzParseStatLine \
	./internal/reader:FuzzReadPath \
	./internal/sdkenv:FuzzScanResource \
	./internal/cmdline:FuzzSanitize

MDATAGEN  := $(BIN)/mdatagen
# Every component and package with a metadata.yaml (mdatagen's own are not).
METADATA  := $(shell find . -name metadata.yaml -not -path './tools/*' -not -path './_build/*' | sort)

.PHONY: all build tools image run test unit fuzz-smoke bench-check fuzz bench soak kernel-test lint clean generate check-generated

all: build

# The collector: ocb generates the distribution in _build/ and compiles it.
build: $(COLLECTOR) tools

$(COLLECTOR): builder-config.yaml $(GO_SOURCES)
	@test -x $(BUILDER) || { echo "Installing ocb (builder $(BUILDER_VERSION))..."; $(GO) install go.opentelemetry.io/collector/cmd/builder@$(BUILDER_VERSION); }
	@tools/build-collector.sh $(BUILDER) builder-config.yaml
	@mkdir -p $(BIN)
	@# A rename, not a copy over: a running collector keeps its binary.
	cp _build/otelcol-processctx $(COLLECTOR).new && mv -f $(COLLECTOR).new $(COLLECTOR)

# The OCI image: the static collector and the image's default config, from
# scratch, with podman (no registry needed). The context is a staging
# directory holding just what the Containerfile copies.
image: $(COLLECTOR)
	@rm -rf _image && mkdir -p _image
	cp $(COLLECTOR) deploy/container/config.yaml _image/
	cp /etc/ssl/certs/ca-certificates.crt _image/
	podman build --quiet --tag $(IMAGE) --file Containerfile _image

tools:
	$(GO) build -o $(BIN)/ctxpublisher ./cmd/ctxpublisher
	$(GO) build -o $(BIN)/ctxdump ./cmd/ctxdump

# Demo: a publisher process beside the collector in the foreground, with
# config.yaml; its entity event shows within seconds. Ctrl-C stops both.
run: build
	@$(BIN)/ctxpublisher -service-name demo-checkout -attr deployment.environment.name=demo -update-every 30s & \
	pub=$$!; trap 'kill $$pub 2>/dev/null' EXIT INT TERM; \
	$(COLLECTOR) --config config.yaml

# Everything: unit and integration tests with real publisher processes, the
# end-to-end tests through the built collector, a fuzz smoke run, and every
# benchmark once for its own checks.
test: build image unit fuzz-smoke bench-check

unit:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) test -count=1 ./...

# A short run of every fuzz target (the seed corpus also runs in unit): a
# count of executions, not a duration, which Go 1.26's fuzzing coordinator
# can fail at its deadline (golang/go#75804).
fuzz-smoke:
	@GO=$(GO) tools/fuzz-report.sh $(SMOKETIME) $(FUZZ_TARGETS)

# Every fuzz target for FUZZTIME (default 60s) each, then a table of
# executions, executions per second and the corpus kept (seed files and
# cache entries); figures: RELIABILITY.md.
fuzz:
	@GO=$(GO) tools/fuzz-report.sh $(FUZZTIME) $(FUZZ_TARGETS)

# Every benchmark once (-benchtime=1x), for the checks each makes of what
# it measures (a steady scan reading maps files, a publisher without its
# entity events, an event not there within its bound, ...): a benchmark
# failing its own check fails make test. The figures of so short a run mean
# nothing. The long ones run shorter: BenchmarkStorm 5 s instead of 30 s,
# BenchmarkHostCost one round of 1,000,000 syscalls instead of five of
# 10,000,000; neither changes what they check. About 4 minutes.
bench-check: build
	STORM_SECONDS=5 HOSTCOST_ROUNDS=1 HOSTCOST_SYSCALLS=1000000 \
	$(GO) test -p 1 -count=1 -run='^$$' -bench=. -benchtime=1x -timeout=20m ./...

bench: build
	@# One package at a time (-p 1): the receiver's scan benchmark runs a
	@# fleet of 1,000 processes and measures CPU time; nothing else should
	@# compete for the cores. BENCHTIME (default 1s) is per benchmark.
	@# Figures and how to read them: BENCHMARKS.md.
	$(GO) test -p 1 -count=1 -run='^$$' -bench=. -benchmem -benchtime=$${BENCHTIME:-1s} -timeout=10m ./...

# Soak tests (issue 14), through the built collector, for minutes: churn
# (50 publishers/s beside 1,000 idle processes, SOAK_CHURN=10m), OTLP load
# while publishers come and go (SOAK_LOAD=5m), faults during load
# (SOAK_FAULTS=3m); about 20 minutes. Durations and rates can be overridden
# in the environment (see test/e2e/soak_test.go). Not part of test, whose
# e2e run includes a short smoke of each. Figures: RELIABILITY.md.
soak: build
	$(GO) test ./test/e2e -run '^TestSoak' -count=1 -timeout 40m -v -args -soak

# The kernel matrix (docs/testing.md, "Kernel matrix"): stock Debian
# kernels booted in qemu (TCG), the kernel-facing tests and the built
# collector at its defaults inside each; installs qemu and busybox when
# missing. KERNELS selects kernels by name (default: all of
# test/kernel/run.sh's matrix); downloads are cached in KERNEL_CACHE.
# About 7 minutes (4 kernels, 2 cores).
KERNELS      ?=
KERNEL_CACHE ?= $(HOME)/.cache/processctx-kernels
kernel-test: $(COLLECTOR)
	GO=$(GO) KERNELS="$(KERNELS)" KERNEL_CACHE="$(KERNEL_CACHE)" test/kernel/run.sh

# Generated metadata, telemetry, component and package tests, documentation
# (mdatagen, built from tools/mdatagen-src when missing or changed).
$(MDATAGEN): tools/build-mdatagen.sh $(shell find tools/mdatagen-src -type f)
	tools/build-mdatagen.sh $(MDATAGEN)

generate: $(MDATAGEN)
	tools/generate-bpf.sh
	@for f in $(METADATA); do \
		echo "mdatagen $$f"; \
		(cd $$(dirname $$f) && $(CURDIR)/$(MDATAGEN) metadata.yaml) || exit 1; \
	done

# Fails when the committed generated files are not what make generate writes.
check-generated: generate
	@git diff --exit-code || { echo "generated files are out of date: run make generate and commit"; exit 1; }
	@untracked=$$(git status --porcelain --untracked-files=all | grep '^??' || true); \
	if [ -n "$$untracked" ]; then echo "make generate wrote files git does not track:"; echo "$$untracked"; exit 1; fi

lint:
	@test -x $(GOBIN)/golangci-lint || $(GO) install $(GOLANGCI)
	$(GOBIN)/golangci-lint run ./...

clean:
	rm -rf $(BIN) _build
