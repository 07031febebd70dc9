# Build, run and test the process-context collector components.
# Every target installs what it needs (Go modules; later the ocb builder).

GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
BIN       := bin
FUZZTIME  ?= 60s
SMOKETIME ?= 5s
GOLANGCI  := github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

# package:target pairs of every Go fuzz target
FUZZ_TARGETS := \
	./internal/procmem:FuzzParseMapsLine \
	./internal/procmem:FuzzParseHeader \
	./internal/procmem:FuzzDecodePayload

.PHONY: all build tools run test unit fuzz-smoke fuzz bench lint clean

all: build

# The collector binary (ocb distribution) lands with the distribution work;
# until then build the tools every later piece relies on.
build: tools
	@echo "note: bin/otelcol-processctx (the ocb collector) is not built yet: builder-config.yaml does not exist so far"

tools:
	$(GO) build -o $(BIN)/ctxpublisher ./cmd/ctxpublisher
	$(GO) build -o $(BIN)/ctxdump ./cmd/ctxdump

# Demo: a publisher process, and the reader listing what this host publishes.
# Ctrl-C stops both.
run: tools
	@echo "note: the collector is not built yet; showing the reader (ctxdump) on a demo publisher"
	@$(BIN)/ctxpublisher -service-name demo-checkout -attr deployment.environment.name=demo -update-every 10s & \
	pub=$$!; trap 'kill $$pub 2>/dev/null' EXIT INT TERM; \
	sleep 1; $(BIN)/ctxdump -watch 2s

test: unit fuzz-smoke

unit:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) test -count=1 ./...

# A short run of every fuzz target (the seed corpus also runs in unit).
fuzz-smoke:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($(SMOKETIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(SMOKETIME) $$pkg || exit 1; \
	done

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	done

bench:
	$(GO) test -run='^$$' -bench=. -benchmem ./...

lint:
	@test -x $(GOBIN)/golangci-lint || $(GO) install $(GOLANGCI)
	$(GOBIN)/golangci-lint run ./...

clean:
	rm -rf $(BIN)
