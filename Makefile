# Casebook build. `make help` lists the targets.
GO        ?= go
TAGS      := sqlite_fts5
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/casebook/casebook/diagnose.BuildVersion=$(VERSION)
export CGO_ENABLED := 1

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: generate
generate: ## regenerate templ code
	@echo ">> generating templ code"
	$(GO) tool templ generate

.PHONY: build
build: generate ## build bin/casebook
	@echo ">> building bin/casebook"
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o bin/casebook ./cmd/casebook

.PHONY: run
run: ## serve the console on the embedded demo at http://127.0.0.1:8080
	$(GO) run -tags $(TAGS) ./cmd/casebook serve

.PHONY: test
test: check-generated lint ## generated-code and lint checks, unit tests with the race detector, then the integration suite
	@echo ">> unit tests"
	$(GO) test -race -tags $(TAGS) -count=1 -timeout 30m ./...
	@$(MAKE) --no-print-directory test-integration

.PHONY: test-deps
test-deps: ## install Prometheus, Alertmanager, VictoriaMetrics and Chromium when missing (apt, as root)
	@./scripts/ensure-test-deps

.PHONY: test-integration
test-integration: test-deps ## integration tests against real Prometheus, Alertmanager, VictoriaMetrics, SQLite and Chromium
	@echo ">> integration tests"
	$(GO) test -tags "$(TAGS) integration" -count=1 -timeout 30m ./...

.PHONY: fuzz
fuzz: ## a short run of every fuzz target
	@for pkg in $$($(GO) list -tags $(TAGS) ./...); do \
	  for f in $$($(GO) test -tags $(TAGS) -list 'Fuzz.*' $$pkg | grep ^Fuzz); do \
	    echo ">> fuzz $$pkg $$f"; $(GO) test -tags $(TAGS) -run XXX -fuzz "^$$f$$" -fuzztime 10s $$pkg || exit 1; \
	  done; \
	done

.PHONY: lint
lint: ## go vet, gofmt and templ fmt checks
	@echo ">> lint"
	$(GO) vet -tags "$(TAGS) integration" ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); test -z "$$out" || (echo "gofmt would change: $$out" >&2; exit 1)
	@$(GO) tool templ fmt -fail . >/dev/null || (echo "templ fmt would change .templ files: run make fmt" >&2; exit 1)

.PHONY: check-generated
check-generated: generate ## fail when generated code differs from the sources
	@git diff --exit-code -- '*_templ.go' || (echo "generated templ code is stale: run make generate and commit" >&2; exit 1)
	@test -z "$$(git status --porcelain -- '*_templ.go')" || (git status --porcelain -- '*_templ.go'; echo "templ generated untracked files: commit them" >&2; exit 1)

.PHONY: fmt
fmt: ## format Go and templ sources
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')
	$(GO) tool templ fmt .

.PHONY: clean
clean: ## remove build output
	rm -rf bin testout
