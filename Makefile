# verilocc: two set-up commands on a fresh machine, `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SHARED ?= ../shared
CORPUS := $(SHARED)/corpus
DEMO   ?= gfx90a/sgemm_64x64_t4x4

.PHONY: install llvm demo test bench clean

$(BIN)/verilocc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(BIN)/verilocc

# Debian's LLVM 19 and 22 (llc-19, llc-22): tests cross-check with them and build LLVM 22 MIR.
llvm:
	@if command -v llc-19 >/dev/null 2>&1 && command -v llc-22 >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm-19 llvm-22 >/dev/null; \
	else echo "note: llc-19/llc-22 not installed and not root: tests that need llc will be skipped"; fi

demo: install
	$(BIN)/verilocc verify $(CORPUS)/$(DEMO).post.mir --pre $(CORPUS)/$(DEMO).pre.mir

test: install llvm
	$(BIN)/python -m pytest -q -n 2

bench: install llvm
	$(BIN)/python bench/verify_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
