# Two entry points: `make demo` and `make test`. Each one creates or updates
# the project's virtualenv (.venv) first, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Two install levels: the demo's (fincon with its llm and info extras, what a
# replayed run imports) and everything (+ dev and ray extras, llama.cpp,
# Whisper, Chromium), which `make test` needs.
DEMO_STAMP := $(VENV)/.fincon-demo-installed
STAMP  := $(VENV)/.fincon-installed
# pytest-xdist workers. `make test`: one per core, plus one. The whole suite
# waits ~15 % of its time (subprocesses, Ray and llama.cpp servers starting,
# sockets) and a third worker on 2 cores fills it: 485 s against 517 s, and
# 559 s against 703 s, two pairs run back to back, the same CPU seconds.
# `make test-fast` hardly waits: one per core (52.8 s against 56.5 s).
WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
FAST_WORKERS ?= auto

.PHONY: demo record-demo test test-fast lint install lock bench clean install-llm-extras install-info-extras install-report-extras reference

# constraints.txt pins every tested version (refresh it with `make lock`);
# pyproject.toml keeps lower bounds, so `pip install fincon` still resolves.
CONSTRAINTS := constraints.txt

# No llama.cpp here: PyPI serves no wheel of llama-cpp-python, so it compiles
# (~6 min on 2 cores) and the replayed demo never loads a model. The first live
# local model builds it (fincon/llm/backends/runtime.py), with a notice.
$(DEMO_STAMP): pyproject.toml Makefile $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch is pinned to the CPU build that pip finds on these machines;
	# anything that pulls torch later must accept this version.
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[llm,info]"
	touch $(DEMO_STAMP)

$(STAMP): $(DEMO_STAMP)
	$(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) -e ".[dev,llm,info,ray,rl,alpaca]"
	$(MAKE) --no-print-directory install-llm-extras install-info-extras install-report-extras
	touch $(STAMP)

# Steps pip cannot express in pyproject.toml (builds with special flags,
# packages that must be installed without their dependencies, Debian
# packages). Each layer owns its own target.
# `make install-llm-extras LLAMA_NATIVE=1` rebuilds llama.cpp for this
# machine's CPU (AVX-512, VNNI where it has them): on these machines live
# calls of the bundled 1.5B take 1.38x less time, prompt evaluation 1.78x
# (docs/llm.md). The native wheel is built without pip's cache (it never
# reads or writes it): caches can be shared between machines, and a native
# build on an older CPU stops with "illegal instruction".
LLAMA_NATIVE ?=
install-llm-extras:
	@# llama.cpp compiles from source (no wheel for 0.3.36, ~6 min on 2 cores);
	@# GGML_NATIVE=OFF keeps the built wheel portable between machines.
ifeq ($(LLAMA_NATIVE),1)
	$(BIN)/python -m pip uninstall --quiet -y llama-cpp-python
	CMAKE_ARGS="-DGGML_NATIVE=ON" $(BIN)/python -m pip install --quiet --no-cache-dir -c $(CONSTRAINTS) "llama-cpp-python[server]==0.3.36"
else
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) "llama-cpp-python[server]==0.3.36"
endif

# openai-whisper: --no-deps keeps pip from pulling triton (1 GB, CPU-useless);
# its real deps (torch pinned above, numba, tiktoken, more-itertools) come from
# the info extras. ffmpeg (whisper file input, call audio) and espeak-ng (the
# sample corpus' speech) are Debian packages, installed only when missing.
install-info-extras:
	@command -v ffmpeg >/dev/null && command -v espeak-ng >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq ffmpeg espeak-ng; }
	$(BIN)/python -m pip install --quiet --no-deps "openai-whisper==20250625"

# Chromium (Debian package) renders the HTML report in tests/test_report_browser.py.
install-report-extras:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }

install: $(STAMP)

# Refresh constraints.txt from the project's virtualenv after a dependency
# change has passed `make test` (torch's local +cpu tag is dropped so the pin
# also matches the CPU wheel elsewhere). Commit the result.
lock: $(STAMP)
	$(BIN)/python -m pip freeze --exclude-editable --all | grep -v '^fincon' \
	  | sed -E 's/^(torch==[^+]+)\+.*/\1/' | LC_ALL=C sort -f > $(CONSTRAINTS)

# The agent team (bundled 1.5B model, replayed from the cache shipped in
# fincon/data/demo) trading TSLA beside an SMA crossover and buy-and-hold:
# offline, about a minute.
demo: $(DEMO_STAMP)
	$(BIN)/fincon demo --out runs/demo

# Re-record the demo's model calls and Whisper transcripts (about 25 minutes on
# 2 cores): needed after any change to a prompt, an answer schema or what an
# agent reads; tests/test_demo.py fails with a cache miss until then.
record-demo: $(STAMP)
	$(BIN)/fincon demo --record --out runs/demo

# Static checks, in seconds, before the suite: the layers (docs/architecture.md),
# ruff's lint and format ([tool.ruff] in pyproject.toml) and mypy on the typed
# layers ([tool.mypy]). CONTRIBUTING.md says how to fix what they report.
lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# make lint first, then the whole suite, every tier, on $(WORKERS) xdist
# workers; the 15 slowest tests are listed at the end.
# The CPU-seconds the suite used (user + sys of pytest and its workers, bash's
# `time`): the budget CONTRIBUTING.md compares across commits on one machine.
test: lint
	bash -c 'TIMEFORMAT="make test: %U user + %S sys CPU-seconds, %R s wall"; time $(BIN)/python -m pytest -q -n $(WORKERS) --dist loadfile --durations=15'

# The inner loop: everything but the slow, browser, live-model and notebook
# tiers (pyproject.toml's markers), in under a minute.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(FAST_WORKERS) --dist loadfile -m "not slow and not browser and not live and not notebook"

# docs/reference.md: every config key from the models (tests/test_reference.py fails when it is stale)
reference: $(STAMP)
	$(BIN)/python -m fincon.cli.reference

bench: $(STAMP)
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/optimizer.py
	$(BIN)/python bench/llm.py
	$(BIN)/python bench/memory.py
	$(BIN)/python bench/team.py
	$(BIN)/python bench/train.py
	$(BIN)/python bench/experiment.py
	$(BIN)/python bench/import.py
	$(BIN)/python bench/stats.py

# The virtualenv and the test cache only: runs/ holds the user's results, the LLM call cache (the
# audit trail a replay reads) and forward journals (sealed, never made again); delete those by hand.
clean:
	rm -rf $(VENV) .pytest_cache
