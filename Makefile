# Two entry points for a fresh clone: `make run` and `make test`.
# Both create .venv and install what they need themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup proto bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip setuptools wheel
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

## Train V-trace on CartPole-v1: a learner and local actor processes over loopback.
run: $(STAMP)
	$(BIN)/aioseed run $(ARGS)

## The whole test suite.
test: $(STAMP)
	$(BIN)/python -m pytest -q $(ARGS)

## Regenerate the committed gRPC code after editing aioseed/proto/aioseed.proto.
proto: $(STAMP)
	$(BIN)/python -m aioseed.proto.generate

bench: $(STAMP)
	$(BIN)/aioseed bench transport --json
	$(BIN)/aioseed bench cartpole --json

clean:
	rm -rf $(VENV) build *.egg-info logs
