# Two entry points for a fresh clone: `make run` and `make test`.
# Both create .venv and install what they need themselves.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup football proto bench learning-curve clean

WEB_STAMP := web/node_modules/.installed
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# apt-get that waits up to 10 minutes for another apt or dpkg (unattended upgrades, a second set-up) to let go of
# its lock, instead of failing at once.
APT_GET := DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -o DPkg::Lock::Timeout=600

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip setuptools wheel
	$(BIN)/pip install -q -e '.[dev,ray,results,tracking,envpool,onnx]'
	touch $(STAMP)

# The console's chart library (uPlot), from npm with the committed lock file.
$(WEB_STAMP): web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_STAMP)

# Debian's Chromium for the console's browser test (Playwright drives it; no browser download).
$(CHROMIUM):
	$(APT_GET) update -qq
	$(APT_GET) install -y -qq chromium

# Debian's OSMesa: MuJoCo renders offscreen in software for `aioseed eval --video` (no display, no GPU).
OSMESA := /usr/lib/x86_64-linux-gnu/libOSMesa.so.8
$(OSMESA):
	$(APT_GET) update -qq
	$(APT_GET) install -y -qq libosmesa6

# Google Research Football (gfootball 2.10.2): apt build dependencies, then the engine built from
# source with the venv activated (the build calls a bare python3) and without build isolation.
# pip keeps the built wheel in its cache, so a second set-up on this machine skips the ~10 min build.
FOOTBALL_STAMP := $(VENV)/.football
FOOTBALL_APT := cmake build-essential libgl1-mesa-dev python3-dev libsdl2-dev libsdl2-image-dev \
	libsdl2-ttf-dev libsdl2-gfx-dev libboost-python-dev libboost-thread-dev libboost-system-dev \
	libboost-filesystem-dev

$(FOOTBALL_STAMP): $(STAMP)
	dpkg -s $(FOOTBALL_APT) >/dev/null 2>&1 || { $(APT_GET) update -qq && $(APT_GET) install -y -qq $(FOOTBALL_APT); }
	. $(BIN)/activate && pip install -q -U setuptools wheel psutil six && \
		pip install -q --no-build-isolation -e '.[dev,ray,results,tracking,envpool,onnx,gfootball]'
	touch $(FOOTBALL_STAMP)

football: $(FOOTBALL_STAMP)

setup: $(STAMP) $(WEB_STAMP) $(OSMESA)

## Train V-trace on CartPole-v1: a learner, local actor processes and the web console, over loopback.
run: $(STAMP) $(WEB_STAMP) $(OSMESA)
	$(BIN)/aioseed run $(ARGS)

## The whole test suite.
test: $(STAMP) $(WEB_STAMP) $(CHROMIUM) $(OSMESA) $(FOOTBALL_STAMP)
	$(BIN)/python -m pytest -q --durations=30 $(ARGS)

## Regenerate the committed gRPC code after editing aioseed/proto/aioseed.proto.
proto: $(STAMP)
	$(BIN)/python -m aioseed.proto.generate

bench: $(STAMP)
	$(BIN)/aioseed bench transport --json
	$(BIN)/aioseed bench cartpole --json

## Train PRESET (default atari: V-trace on ALE/Pong-v5) for MINUTES (default 30) per call, resuming from
## logs/curves/<env>-<preset>; writes curve.csv and curve.png there. More flags: ARGS='--env ALE/Breakout-v5'.
learning-curve: $(STAMP)
	$(BIN)/aioseed bench learning-curve --preset $(or $(PRESET),atari) --minutes $(or $(MINUTES),30) $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info logs web/node_modules test-output
