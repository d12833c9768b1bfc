# verilocc on a fresh machine: `make demo`, `make check` (quick tier), `make test` (everything).
PYTHON ?= python3
# The virtual environment. A VENV named on the command line or in the environment is used as
# it is (`make check VENV=~/venvs/verilocc`): nothing is installed into it. Either way the
# checkout's own code runs, through PYTHONPATH.
VENV   ?= .venv
BIN    := $(VENV)/bin
PY     := env PYTHONPATH=$(CURDIR) $(BIN)/python
VERILOCC := $(PY) -m verilocc
# The larger corpus and kernel sources: optional, used by `make test` and `make dataset`.
SHARED ?= ../shared
# The demo's pairs: the repository's examples (or DEMO_DIR=$(SHARED)/corpus DEMO=gfx1100/fa_d64_kv8).
DEMO_DIR ?= examples
DEMO   ?= gfx90a/sgemm_naive
# A kernel whose source (softmax.hip) the shipped model never saw in training.
DEMO_ALLOC ?= gfx90a/softmax_row
# Where `make model` writes its model (`verilocc allocate --model build/model`); MODEL=
# verilocc/llm/data/verilocc-small replaces the shipped weights with it.
MODEL  ?= build/model
# The quick tier: examples only (VERILOCC_CORPUS empty), no llc, no torch; under a minute on 2 cores.
CHECK_TESTS := tests/test_layers.py tests/test_examples.py tests/test_mir.py tests/test_analysis.py \
               tests/test_reports.py tests/test_target.py tests/test_bad_input.py tests/test_wrong_allocations.py \
               tests/test_fixed_stack.py tests/test_as_read.py \
               tests/test_native.py::test_the_package_type_checks

.PHONY: install native model-install llvm hunt-llvm hunt hunt-random hunt-llvm-tests demo check test bench clean dataset model model-marks model-eval heldout-pairs heldout-bench

# The checkout on the path as a plain `.pth` line: setuptools' default editable finder costs every
# command about 50 ms of start-up (a sixth of verifying a small kernel).
EDITABLE := --config-settings editable_mode=compat

ifeq ($(origin VENV),file)
# With the first install, the verifier's core is compiled (mypyc, about 2 minutes): `native`.
$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q $(EDITABLE) -e '.[dev]'
	-$(PY) scripts/build_native.py --if-stale
	touch $@

# torch, transformers, peft, matplotlib for the model commands (pyproject extra `model`), Dask (`cluster`),
# matplotlib and selenium for `verilocc show` and its browser tests (`view`).
$(BIN)/.model: pyproject.toml | $(BIN)/.installed
	$(BIN)/python -m pip install -q $(EDITABLE) -e '.[dev,model,cluster,view]'
	touch $@

install: $(BIN)/.installed
model-install: $(BIN)/.model
else
install model-install:
	@test -x $(BIN)/python || { echo "error: VENV=$(VENV) has no bin/python" >&2; exit 2; }
endif

# The verifier's core compiled by mypyc (verilocc/native.py), again when a source of it changed
# since its build; until then, and wherever the build fails, verilocc runs those sources as they
# are. `make check` does not wait for it: after an edit it runs the sources.
native: install
	-$(PY) scripts/build_native.py --if-stale

# Training data: compile $(SHARED)/kernels (its manifest and the variants of the trained sources
# in bench/model_eval/train_manifest.txt) with clang-19, pairs with llc-19 and llc-22, examples.
# DATASET_TEACHER=solver: the SMT allocator's answers where they beat LLVM's (docs/allocate.md#training-data;
# the shipped weights were trained on LLVM's).
DATASET_TEACHER ?= llvm
dataset: model-install
	nice -n 10 $(VERILOCC) dataset build --kernels $(SHARED)/kernels --manifest bench/model_eval/train_manifest.txt \
	    --out build/dataset -j 2 --teacher $(DATASET_TEACHER)

# The project's small model, in two stages. Stage 1 trains MODEL_BASE from scratch: MODEL_EPOCHS
# epochs on one thread, niced, 6,319 steps; the learning rate decays over the epochs, so the run
# is the same on any machine; 78 minutes on one core beside another training (two contended
# threads were measured slower than one). Stage 2 fine-tunes it into MODEL for 2 epochs with a
# ban on the answer's own register in half of the lines (--mark-answers 0.5: 885 steps, 25 to 37
# minutes beside other jobs), which teaches the model to read a counterexample's `!`
# (docs/measurements.md, "Reading a counterexample, line by line"). Both stages: under 2 hours.
# The shipped weights (verilocc/llm/data/verilocc-small) are this recipe's, trained on
# `make dataset`'s examples (docs/allocate.md#model-training-decoding).
# `make model-marks MODEL_BASE=DIR` runs stage 2 alone from DIR's weights.
MODEL_EPOCHS ?= 14
MODEL_BASE ?= build/model-base
model: dataset
	nice -n 10 $(VERILOCC) train --data build/dataset -o $(MODEL_BASE) --epochs $(MODEL_EPOCHS) --minutes 120 --seed 0 --threads 1 \
	    --size tiny --listed-loss --shift-ids 0.5 --unlikelihood
	$(MAKE) --no-print-directory model-marks

model-marks: model-install
	@test -f $(MODEL_BASE)/model.safetensors || { echo "error: no model in MODEL_BASE=$(MODEL_BASE): run make model" >&2; exit 2; }
	nice -n 10 $(VERILOCC) train --base $(MODEL_BASE) --data build/dataset -o $(MODEL) --epochs 2 --minutes 60 --seed 0 --threads 1 \
	    --listed-loss --shift-ids 0.5 --unlikelihood --lr 5e-4 --mark-answers 0.5

# `verilocc eval` on the held-out functions (docs/allocate.md#evaluation): the corpus pairs, the
# unseen target's pairs (gfx906), more variants of the held-out sources (heldout_manifest.txt)
# and LLVM's AMDGPU tests (pairs made with llc-19).
model-eval: model-install llvm
	nice -n 10 $(PY) bench/model_eval/heldout_pairs.py --kernels $(SHARED)/kernels --targets gfx906 --out build/heldout
	nice -n 10 $(PY) bench/model_eval/heldout_pairs.py --kernels $(SHARED)/kernels --manifest bench/model_eval/heldout_manifest.txt \
	    --targets gfx90a,gfx942,gfx1100,gfx906 --out build/heldout-more
	nice -n 10 $(PY) scripts/llvm_tests_corpus.py --out build/llvm-tests --llvm 19 \
	    --targets gfx90a,gfx942,gfx1100,gfx906 --modes one-process -j 1
	nice -n 10 $(VERILOCC) eval --pairs $(SHARED)/corpus --pairs build/heldout/pairs-llc-19 --pairs build/heldout-more/pairs-llc-19 \
	    --kernels $(SHARED)/kernels --manifest bench/model_eval/heldout_manifest.txt \
	    --llvm-tests build/llvm-tests --llvm-test-functions 10 --large-samples 10 --targets gfx90a,gfx942,gfx1100,gfx906 -j 2 \
	    -o bench/model_eval
	nice -n 10 $(PY) bench/model_eval/feedback_gaps.py --llvm-tests build/llvm-tests \
	    --targets gfx90a,gfx942,gfx1100,gfx906 -o bench/model_eval/feedback_gaps.json

# Debian's LLVM 19 and 22 (llc-19, llc-22) and clang-19: tests cross-check with them and build LLVM 22 MIR;
# Debian's chromium and chromedriver: the browser tests of `verilocc show` (nothing downloads a browser).
llvm:
	@if command -v llc-19 >/dev/null 2>&1 && command -v llc-22 >/dev/null 2>&1 && command -v clang-19 >/dev/null 2>&1 \
	    && command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm-19 llvm-22 clang-19 chromium chromium-driver >/dev/null; \
	else echo "note: llc-19/llc-22/clang-19/chromium not installed and not root: tests that need them will be skipped"; fi

demo: install native model-install
	@mkdir -p build/demo
	@echo "== LLVM's allocation of $(DEMO): VERIFIED"
	$(VERILOCC) verify $(DEMO_DIR)/$(DEMO).post.mir --pre $(DEMO_DIR)/$(DEMO).pre.mir
	@echo "== a wrong allocation of vadd: REJECTED with its places and a counterexample; the page build/demo/vadd.html shows it"
	-$(VERILOCC) verify docs/view/vadd.clobbered.post.mir --pre $(DEMO_DIR)/gfx90a/vadd.pre.mir
	-$(VERILOCC) show docs/view/vadd.clobbered.post.mir --pre $(DEMO_DIR)/gfx90a/vadd.pre.mir -o build/demo/vadd.html
	@echo "== the model's answers without constraints, 2 rounds: counterexamples go back into the prompt; written only if VERIFIED"
	-$(VERILOCC) allocate $(DEMO_DIR)/$(DEMO_ALLOC).pre.mir --no-constrained --no-repair --rounds 2 \
	    --transcript build/demo/unconstrained.json -o build/demo/unconstrained.mir
	@echo "== with constrained decoding (default): stops at the first VERIFIED allocation"
	$(VERILOCC) allocate $(DEMO_DIR)/$(DEMO_ALLOC).pre.mir --transcript build/demo/transcript.json -o build/demo/alloc.mir
	$(VERILOCC) verify build/demo/alloc.mir --pre $(DEMO_DIR)/$(DEMO_ALLOC).pre.mir
	@if command -v llc-19 >/dev/null 2>&1; then \
	  llc-19 -mtriple=amdgcn-amd-amdhsa -mcpu=$(firstword $(subst /, ,$(DEMO_ALLOC))) -O3 -verify-machineinstrs \
	    -start-after=virtregrewriter,1 build/demo/alloc.mir -o build/demo/alloc.s && \
	  grep -E '; (NumVgprs|NumSgprs|Occupancy):' build/demo/alloc.s; fi

check: install
	VERILOCC_CORPUS= $(PY) -m pytest -q -n 2 -m "not slow and not llc" $(CHECK_TESTS)

test: install native model-install llvm
	$(PY) -m pytest -q -n 2 --durations=25

# The hunt for LLVM's own allocation bugs (docs/hunt.md; not part of `make test`): every llc-13 to
# llc-22 on PATH allocates the known-bug reproducers, the fidelity inputs, 31 of LLVM's tests,
# the LLVM 15/16 kernel IR, our kernels (clang-19, when $(SHARED)/kernels is there) and fuzzer
# programs (also with the fast and basic allocators); the table goes to docs/hunt.md and
# bench/results/hunt.json. Hours on 2 shared cores: `nice make hunt HUNT_JOBS=1`; after a change to the
# triage file, `make hunt HUNT_FLAGS=--retable` sorts the finished hunt again in a minute.
HUNT_JOBS ?= 1
HUNT_TARGETS ?= gfx90a,gfx942,gfx1100
HUNT_TESTS ?= bitcast-v4f16-v4i16 llvm.sqrt.f16 fma.f16 call-alias-register-usage-agpr agpr-remat \
              agpr-register-count v_add_u64_pseudo_sdwa select64 amdgpu-shader-calling-convention \
              llvm.amdgcn.interp.f16 basic-call-return call-encoding call-skip endcf-loop-header \
              si-annotate-cfg-loop-assert si-lower-control-flow-kill urem sdivrem24 inlineasm-16 \
              convergent-inlineasm inline-asm.i128 spill-alloc-sgpr-init-bug \
              sgpr-spill-update-only-slot-indexes bb-prolog-spill-during-regalloc v1024 \
              extract_vector_elt-f64 mixed_wave32_wave64 llvm.amdgcn.ballot.i64.wave32 \
              llvm.amdgcn.init.exec.wave32 atomic-optimizer-strict-wqm llvm.amdgcn.wqm.vote
HUNT_KERNELS ?= vadd,reduce_sum,sgemm_naive,softmax_row,sgemm_64x64_t4x4,sgemm_128x128_t8x8_v64,sgemm_128x128_t8x8_s16,sgemm_128x128_t8x8_s18
HUNT_HIP := $(if $(wildcard $(SHARED)/kernels/manifest.txt),--hip $(SHARED)/kernels --kernels $(HUNT_KERNELS))

# Debian's LLVM 13 to 16, 19 and 22 (and clang-19) for the hunt.
hunt-llvm:
	@missing=""; for v in 13 14 15 16 19 22; do command -v llc-$$v >/dev/null 2>&1 || missing="$$missing llvm-$$v"; done; \
	command -v clang-19 >/dev/null 2>&1 || missing="$$missing clang-19"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	else echo "note:$$missing not installed and not root: the hunt runs the LLVMs that are there"; fi

hunt: install hunt-llvm
	$(VERILOCC) hunt tests/fixtures/hunt/known tests/fixtures/fidelity tests/fixtures/llvm/15/ll \
	  tests/fixtures/llvm/16/ll $(addprefix tests/fixtures/llvm-tests/ll/,$(addsuffix .ll,$(HUNT_TESTS))) \
	  $(HUNT_HIP) --fuzz 5 --targets $(HUNT_TARGETS) --regalloc greedy --mir-regalloc greedy,fast,basic \
	  --reduce --out build/hunt --markdown docs/hunt.md --json bench/results/hunt.json --command-name "make hunt" \
	  -j $(HUNT_JOBS) $(HUNT_FLAGS) || [ $$? -eq 1 ]  # 1: candidate LLVM bugs in the table, not a failure of the hunt

# Random programs (docs/hunt.md, "Random programs"): RANDOM_EXAMPLES seeds from RANDOM_SEED, GPU-shaped
# ones of our own and llvm-stress's, through llc-16, llc-19 and llc-22 (greedy at -O3, fast at -O0) on
# five targets; the table goes to bench/results/hunt-random.{md,json}. Resumable: run it again to go
# on where it stopped; a larger RANDOM_EXAMPLES does only the new seeds.
RANDOM_EXAMPLES ?= 416
RANDOM_JOBS ?= 2
RANDOM_SEED ?= 0
hunt-random: install hunt-llvm
	$(VERILOCC) hunt --random --examples $(RANDOM_EXAMPLES) --seed $(RANDOM_SEED) --llvm 16,19,22 \
	  --modes one-process --pair-timeout 300 --out build/hunt-random --markdown bench/results/hunt-random.md \
	  --json bench/results/hunt-random.json --command-name "make hunt-random" \
	  -j $(RANDOM_JOBS) $(HUNT_FLAGS) || [ $$? -eq 1 ]

# LLVM's tests through llc-16 (bench/results/hunt-llvm-tests.md; llvm-tests.md has llc-19 and llc-22).
hunt-llvm-tests: install hunt-llvm
	$(VERILOCC) hunt tests/fixtures/llvm-tests/ll --llvm 16 --targets gfx90a,gfx1100 --regalloc greedy \
	  --modes reread --out build/hunt-llvm-tests --markdown bench/results/hunt-llvm-tests.md --command-name "make hunt-llvm-tests" \
	  -j $(HUNT_JOBS) $(HUNT_FLAGS) || [ $$? -eq 1 ]

bench: install native llvm
	$(PY) bench/verify_bench.py

# The held-out kernels of bench/heldout (written for the bench, never used to tune anything) as
# pre/post pairs of llc-19 and llc-22 for gfx90a, gfx942 and gfx1100 (about a minute), and the
# bench on the final assembly (docs/allocate.md#the-held-out-bench-on-the-final-assembly):
# HELDOUT_LLVM, HELDOUT_ONLY (shell patterns of llc-V/target/kernel), HELDOUT_STRATEGY.
HELDOUT_LLVM ?= 19
HELDOUT_ONLY ?= llc-$(HELDOUT_LLVM)/gfx90a/*
HELDOUT_STRATEGY ?= model,solver
HELDOUT_TIMEOUT ?= 20
heldout-pairs:
	for v in 19 22; do nice -n 10 $(PY) scripts/llc_corpus.py --llc llc-$$v --hip bench/heldout --clang clang-19 \
	    --targets gfx90a,gfx942,gfx1100 --out build/heldout-bench/pairs-llc-$$v -j 2 || exit 1; done

heldout-bench: model-install
	@test -d build/heldout-bench/pairs-llc-$(HELDOUT_LLVM) || $(MAKE) --no-print-directory heldout-pairs
	nice -n 10 $(PY) bench/optimal_vs_greedy.py run --set heldout --llvm $(HELDOUT_LLVM) --only '$(HELDOUT_ONLY)' \
	    --strategy $(HELDOUT_STRATEGY) --timeout $(HELDOUT_TIMEOUT) -o build/heldout-bench/results.jsonl

clean:
	$(PYTHON) scripts/build_native.py --clean
	rm -rf .venv .pytest_cache .hypothesis build *.egg-info
