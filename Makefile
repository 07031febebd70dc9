# Copyright The otelcol-processctx Authors
# SPDX-License-Identifier: Apache-2.0

# Build, run and test the process-context collector components.
# Every target installs what it needs (Go modules; later the ocb builder).

GO        ?= go
# Nothing here uses cgo, and the collector (ocb), the release and the kernel
# matrix's guests build without it: the tests, vet and the tools build the
# same way, so that each package compiles once into Go's cache for all of
# them. make flake sets it back (-race needs cgo).
export CGO_ENABLED ?= 0
GOBIN     := $(shell $(GO) env GOPATH)/bin
BIN       := bin
FUZZTIME  ?= 60s
SMOKETIME ?= 10000x
GOLANGCI  := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
BUILDER   := $(GOBIN)/builder
BUILDER_VERSION := v0.165.0
COLLECTOR := $(BIN)/otelcol-processctx
INSTALL_GOLANGCI = test -x $(GOBIN)/golangci-lint || { echo "Installing golangci-lint..."; $(GO) install $(GOLANGCI); }
INSTALL_BUILDER  = test -x $(BUILDER) || { echo "Installing ocb (builder $(BUILDER_VERSION))..."; $(GO) install go.opentelemetry.io/collector/cmd/builder@$(BUILDER_VERSION); }
# The distribution's version: builder-config.yaml's dist.version, which
# the collector reports (--version) and the image is tagged with.
VERSION   ?= $(shell awk '/^dist:/ {d = 1; next} /^[^ \t\#]/ {d = 0} d && $$1 == "version:" {print $$2}' builder-config.yaml)
# The collector's OCI image (make image; Containerfile), named for the
# registry it is meant for: make image REGISTRY=registry.example.com/team.
REGISTRY  ?= localhost
IMAGE     ?= $(REGISTRY)/otelcol-processctx:$(VERSION)
# The commit the image is built from (its org.opencontainers.image.revision),
# -dirty when the work tree differs from it.
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)$(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo -dirty)
# The architectures (GOARCH, all linux) the collector is built for by
# bin/linux_<arch>/otelcol-processctx, which the image, the release and the
# kernel matrix's guests use; bin/otelcol-processctx is this host's.
ARCHES    := amd64 arm64
HOST_ARCH := $(shell $(GO) env GOARCH)
# ocb's generated sources of the distribution (builder-config.yaml's
# output_path); the stamp marks a generation that finished.
GENERATED := _build/.generated
# Where make release writes (docs/contributing.md, "Releasing").
RELEASE_DIR ?= _build/release/$(VERSION)
# What the collector is compiled from: the Go sources and the eBPF objects
# they embed (not _build-custom, the own-collector doc test's ocb output).
GO_SOURCES := $(shell find . \( -name '*.go' -o -name '*_bpfel.o' \) -not -path './_build/*' -not -path './_build-custom/*') go.mod go.sum

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

.PHONY: all build tools tools-install image release release-test run test unit fuzz-smoke golangci-install bench-check fuzz bench soak kernel-test flake lint spdx clean generate check-generated

all: build

# The collector: ocb generates the distribution's sources in _build/, and
# Go compiles them for this host's architecture.
build: $(COLLECTOR) tools

$(GENERATED): builder-config.yaml $(GO_SOURCES)
	@$(INSTALL_BUILDER)
	@tools/build-collector.sh -sources $(BUILDER) builder-config.yaml
	@touch $@

# The collector for linux/<arch>, the one build of it that the release's
# archives, the image and the kernel matrix's guests carry: from ocb's
# generated sources, static, -trimpath, stripped, as ocb builds it
# (tools/build-collector.sh). A first build for an architecture compiles
# about 1,200 packages (minutes); later ones reuse Go's cache.
$(BIN)/linux_%/otelcol-processctx: $(GENERATED)
	@tools/build-collector.sh -arch $* builder-config.yaml $@

# This host's, at the path make run, the tests and the docs use.
$(COLLECTOR): $(BIN)/linux_$(HOST_ARCH)/otelcol-processctx
	@# A rename, not a copy over: a running collector keeps its binary.
	cp $< $@.new && mv -f $@.new $@

# The OCI image (Containerfile), for linux/amd64 and linux/arm64, from
# this host with podman and no emulation (FROM scratch plus files): each
# architecture's collector (bin/linux_<arch>/), journalctl with the
# libraries it loads from Debian's packages of that architecture
# (tools/stage-journalctl.sh), the image's default config and the build
# host's CA bundle; the licenses in /licenses (journalctl's and its
# libraries' in /usr/share/doc), the OCI labels in the Containerfile.
# tools/build-image.sh tags each architecture's image IMAGE-<arch> and
# leaves a manifest list naming both at IMAGE, which podman runs as this
# host's.
image: $(foreach arch,$(ARCHES),$(BIN)/linux_$(arch)/otelcol-processctx)
	@IMAGE="$(IMAGE)" VERSION="$(VERSION)" REVISION="$(REVISION)" tools/build-image.sh $(ARCHES)

# A release (docs/contributing.md, "Releasing"): the collector, ctxdump
# and ctxpublisher for linux/amd64 and linux/arm64 in one archive each,
# the image (both architectures) at IMAGE and saved as an OCI archive, SHA256SUMS and the
# release notes from CHANGELOG.md, in RELEASE_DIR. VERSION must be given, and be
# builder-config.yaml's dist.version.
release:
ifeq ($(origin VERSION),file)
	$(error make release needs the version: make release VERSION=x.y.z)
endif
	@GO="$(GO)" MAKE="$(MAKE)" VERSION="$(VERSION)" IMAGE="$(IMAGE)" RELEASE_DIR="$(RELEASE_DIR)" tools/release.sh

# The release test (test/release): make release into a temporary
# directory, then its archives, checksums, binaries and image checked,
# then the kernel matrix with the release's collectors, the arm64 guests'
# whole plan included. It builds the collector for two architectures:
# about a minute with Go's build cache warm for both, about 6 minutes when
# arm64's is cold (2 cores; docs/contributing.md), then about 10 minutes of
# guests. Not part of test.
release-test:
	PROCESSCTX_RELEASE_TEST=1 $(GO) test -count=1 -run '^TestRelease$$' -timeout 40m -v ./test/release
	@# The release's collectors (bin/linux_<arch>, what its archives carry)
	@# on every kernel of the matrix, the arm64 guests' whole plan included
	@# (CI runs a short one there).
	@$(MAKE) --no-print-directory kernel-test KERNEL_ARM64_PLAN=

# The value of a variable, for tests that need what the Makefile says
# (make -s print-IMAGE).
print-%:
	@echo '$($*)'

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
# benchmark once for its own checks. The tests and the fuzz smoke run side
# by side (the tests mostly wait on processes; the fuzzers compile and
# compute), each's output whole when it ends; the benchmarks after them,
# since they measure CPU and start fleets of their own.
test: build image
	@$(MAKE) --no-print-directory -j2 --output-sync=target unit fuzz-smoke
	@$(MAKE) --no-print-directory bench-check

unit:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	PROCESSCTX_IMAGE=$(IMAGE) $(GO) test -count=1 ./...

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
# BenchmarkHostCost one round of 1,000,000 syscalls and 100,000 munmaps
# instead of five of 10,000,000 and 1,000,000, BenchmarkCollector hosts of
# 40 and 200 processes with windows of seconds instead of 400 and 4,000
# with minutes (about 40 s: it checks what it did, not its figures; its
# profiles and their pictures are kept in _build/bench-check/profiles),
# BenchmarkAtRest seconds instead of a minute and a half; none changes
# what they check. About 4 minutes.
bench-check: build
	STORM_SECONDS=5 HOSTCOST_ROUNDS=1 HOSTCOST_SYSCALLS=1000000 HOSTCOST_MUNMAPS=100000 \
	COLLECTORBENCH_SIZES=40,200 COLLECTORBENCH_YOUNG=4s COLLECTORBENCH_STEADY=2s COLLECTORBENCH_CHURN=2s COLLECTORBENCH_BRIEF=2s \
	COLLECTORBENCH_PROFILES=$(CURDIR)/_build/bench-check/profiles REST_SETTLE=3s REST_WINDOW=2s \
	$(GO) test -p 1 -count=1 -run='^$$' -bench=. -benchtime=1x -timeout=20m ./...

bench: build
	@# One package at a time (-p 1): the tracker's scan benchmark runs a
	@# fleet of 1,000 processes and measures CPU time; nothing else should
	@# compete for the cores. BENCHTIME (default 1s) is per benchmark.
	@# test/e2e takes the longest: BenchmarkCollector's hosts of 400 and
	@# 4,000 processes (about 3 minutes each, more while other processes
	@# keep the host busy) and BenchmarkHostCost.
	@# The output is kept in _build/bench/bench.txt, and the table of
	@# current figures at the top of BENCHMARKS.md is written from it
	@# (tools/figures). BenchmarkCollector's CPU profiles go to
	@# docs/profiles (the pictures, .svg, which BENCHMARKS.md links, and
	@# the profiles, .pb.gz, which git ignores). How to read them:
	@# BENCHMARKS.md.
	@mkdir -p _build/bench
	bash -o pipefail -c "COLLECTORBENCH_PROFILES=$(CURDIR)/docs/profiles $(GO) test -p 1 -count=1 -run='^$$' -bench=. -benchmem -benchtime=$${BENCHTIME:-1s} -timeout=40m ./... 2>&1 | tee _build/bench/bench.txt"
	$(GO) run ./tools/figures -bench _build/bench/bench.txt -file BENCHMARKS.md

# Soak tests (issue 14), through the built collector, for minutes: churn
# (50 publishers/s beside 1,000 idle processes, SOAK_CHURN=10m), OTLP load
# while publishers come and go (SOAK_LOAD=5m), faults during load
# (SOAK_FAULTS=3m); about 20 minutes. Durations and rates can be overridden
# in the environment (see test/e2e/soak_test.go). Not part of test, whose
# e2e run includes a short smoke of each. Figures: RELIABILITY.md.
soak: build
	$(GO) test ./test/e2e -run '^TestSoak' -count=1 -timeout 40m -v -args -soak

# Flaky tests (docs/testing.md, "Flaky tests"): the packages of the
# tracker and the components with -race, FLAKE_COUNT times each, while a
# busy loop occupies every core, then the tests that failed and how often.
# FLAKE_RUN narrows it to some tests. About 25 minutes at the defaults.
FLAKE_COUNT ?= 20
FLAKE_PKGS  ?= ./internal/tracker/... ./processor/... ./receiver/... ./extension/...
flake:
	@CGO_ENABLED=1 GO=$(GO) tools/flake.sh -count $(FLAKE_COUNT) $(if $(FLAKE_RUN),-run '$(FLAKE_RUN)') $(FLAKE_PKGS)

# The kernel matrix (docs/testing.md, "Kernel matrix"): stock Debian
# kernels, x86-64 and arm64, booted in qemu (TCG), the kernel-facing tests
# and the release's collector (bin/linux_<arch>) at its defaults inside
# each; installs qemu and the cross compiler when missing. KERNELS selects
# kernels by name (default: all of test/kernel/run.sh's matrix);
# KERNEL_ARM64_PLAN=short runs only the reader's tests and the collector's
# in the arm64 guests (CI; the whole plan otherwise); downloads are cached
# in KERNEL_CACHE. About 10 minutes (7 kernels, KERNEL_JOBS=2 booted at
# once, 2 cores).
KERNELS      ?=
KERNEL_CACHE ?= $(HOME)/.cache/processctx-kernels
KERNEL_ARM64_PLAN ?=
kernel-test: $(COLLECTOR)
	GO=$(GO) KERNELS="$(KERNELS)" KERNEL_CACHE="$(KERNEL_CACHE)" KERNEL_ARM64_PLAN="$(KERNEL_ARM64_PLAN)" test/kernel/run.sh

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

# The license header of every source file (tools/spdx.sh), then the linters.
lint:
	tools/spdx.sh check
	@$(INSTALL_GOLANGCI)
	$(GOBIN)/golangci-lint run ./...

# The tools the checks use, compiled once: golangci-lint, ocb's builder and
# mdatagen (each target also compiles the one it needs on first use).
tools-install: $(MDATAGEN) golangci-install
	@$(INSTALL_BUILDER)

golangci-install:
	@$(INSTALL_GOLANGCI)

# Adds the license header to the source files that lack it (after a merge).
spdx:
	tools/spdx.sh add

clean:
	rm -rf $(BIN) _build _image
