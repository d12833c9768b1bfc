# verilocc: two set-up commands on a fresh machine, `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared
CORPUS := $(SHARED)/corpus
DEMO   ?= gfx90a/sgemm_64x64_t4x4
# A kernel whose source (softmax.hip) the model never saw in training.
DEMO_ALLOC ?= gfx90a/softmax_row
MODEL  := models/verilocc-small

.PHONY: install model-install llvm demo test bench clean dataset model

$(BIN)/verilocc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/verilocc

# torch, transformers, peft, matplotlib for the model commands (pyproject extra `model`).
$(BIN)/.model: pyproject.toml | $(BIN)/verilocc
	$(BIN)/pip install -q -e '.[dev,model]'
	touch $@

model-install: $(BIN)/.model

# Training data: compile ../shared/kernels with clang-19, pairs with llc-19 and llc-22, examples.
dataset: model-install
	$(BIN)/verilocc dataset build --kernels $(SHARED)/kernels --out build/dataset -j 2

# The project's small model (checked in; this rebuilds it: about 30 minutes on 2 cores).
model: dataset
	$(BIN)/verilocc train --data build/dataset -o $(MODEL) --minutes 28 --seed 0 --threads 1

$(MODEL)/model.safetensors:
	$(MAKE) model

# Debian's LLVM 19 and 22 (llc-19, llc-22): tests cross-check with them and build LLVM 22 MIR.
llvm:
	@if command -v llc-19 >/dev/null 2>&1 && command -v llc-22 >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm-19 llvm-22 >/dev/null; \
	else echo "note: llc-19/llc-22 not installed and not root: tests that need llc will be skipped"; fi

demo: install model-install $(MODEL)/model.safetensors
	$(BIN)/verilocc verify $(CORPUS)/$(DEMO).post.mir --pre $(CORPUS)/$(DEMO).pre.mir
	@mkdir -p build/demo
	@echo "== the loop without constraints: counterexamples go back into the prompt; no VERIFIED answer, nothing written"
	-$(BIN)/verilocc allocate $(CORPUS)/$(DEMO_ALLOC).pre.mir --no-constrained --no-repair --rounds 2 \
	    --transcript build/demo/unconstrained.json -o build/demo/unconstrained.mir
	@echo "== with constrained decoding (default): stops at the first VERIFIED allocation"
	$(BIN)/verilocc allocate $(CORPUS)/$(DEMO_ALLOC).pre.mir --transcript build/demo/transcript.json -o build/demo/alloc.mir
	$(BIN)/verilocc verify build/demo/alloc.mir --pre $(CORPUS)/$(DEMO_ALLOC).pre.mir
	@if command -v llc-19 >/dev/null 2>&1; then \
	  llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=$(firstword $(subst /, ,$(DEMO_ALLOC))) -O3 -verify-machineinstrs \
	    -start-after=virtregrewriter,1 build/demo/alloc.mir -o build/demo/alloc.s && \
	  grep -E '; (NumVgprs|NumSgprs|Occupancy):' build/demo/alloc.s; fi

test: install model-install llvm
	$(BIN)/python -m pytest -q -n 2

bench: install llvm
	$(BIN)/python bench/verify_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
