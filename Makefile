# The two Quick start commands are `make demo` and `make test`; both install what they
# need on a fresh machine (the Ollama build is cached outside the repository).
GO ?= go
BIN := bin/frognano

.PHONY: build demo test setup vet bench-learn
# The Python and JavaScript/TypeScript parsers (tree-sitter) are C: without a C compiler Go
# turns cgo off and the build fails with a message about build constraints.
build:
	@test "$$($(GO) env CGO_ENABLED)" = 1 || { echo "frognano needs cgo (tree-sitter parsers): install gcc (apt-get install build-essential) and leave CGO_ENABLED unset"; exit 1; }
	$(GO) build -o $(BIN) ./cmd/frognano
	$(GO) build -o $(dir $(BIN))frognano-modelgen ./cmd/frognano-modelgen

setup:
	scripts/setup.sh

# The demo needs only the Ollama server (when no FrogNano model is installed), not the test
# tools that setup.sh adds. Its scripted model is written by bin/frognano-modelgen, which
# build puts next to frognano: the writer links Ollama's ggml packages, kept out of the
# binary editors start.
demo: build
	@scripts/build-ollama.sh >/dev/null
	$(BIN) demo

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Every test is a new repository, and the sandbox keeps a Go build cache per repository: the
# tests share one instead (FROGNANO_SANDBOX_GOCACHE, see agent/run.go), or each would build
# the standard library again.
# The lsp tests run a second time with jsonrpc2's poison build, which scribbles over each
# request the library recycles: a handler that keeps a request past its return (the
# library's rule; see the hazards in lsp/transport.go) reads the poison and fails loudly
# instead of silently reading another request's data.
# pytest's temporary folders go in a private folder of this run: its default,
# /tmp/pytest-of-$$USER, is shared by every run on the machine, and pytest refuses (every
# tmp_path test errors) when another user owns it, as a run by another account leaves it.
test: setup vet
	cd editors/vscode && npm test
	t=$$(mktemp -d) && trap 'rm -rf "$$t"' EXIT && cd finetune/trainer && \
		"$${FROGNANO_TRAINER_PYTHON:-$${FROGNANO_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/frognano}/trainer-venv/bin/python}" -m pytest -q --basetemp="$$t/pytest"
	FROGNANO_SANDBOX_GOCACHE="$${FROGNANO_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/frognano}/sandbox-go-tests" \
		$(GO) test -race -count=1 -timeout 30m ./...
	FROGNANO_SANDBOX_GOCACHE="$${FROGNANO_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/frognano}/sandbox-go-tests" \
		$(GO) test -race -count=1 -timeout 30m -tags jsonrpc2poison ./lsp/

# The learning benchmark (finetune/learnbench): the online loop with SmolLM2-135M on CPU,
# a few iterations and seeds; tens of minutes on a 2-core machine, so not part of test.
# Knobs: LEARNBENCH_FLAGS (see `go run ./cmd/frognano-learnbench -h`), e.g. on a GPU machine
# LEARNBENCH_FLAGS="-seeds 4 -iterations 8 -group 8 -tasks 8 -held-out 20".
bench-learn:
	@scripts/build-ollama.sh >/dev/null
	nice -n 10 $(GO) run ./cmd/frognano-learnbench -out learnbench-out $(LEARNBENCH_FLAGS)
