"""Running llc to make pre/post register-allocation MIR pairs, for every part of verilocc that
needs them: the hunt for LLVM's allocation bugs (`verilocc.hunt`), the model's training data
(`verilocc dataset build`), the scripts and the tests.

Data flow: HIP kernels of a manifest -> LLVM IR with a given clang (`hip`), or a corpus's `.ll`
files -> llc, one run per step (`run`), on MIR text read and normalised until llc reads it back
as itself (`text`), wave32's implicit `$vcc_lo` operands patched for llc's MIR parser
(`wave32`) -> the stored pre and post files of one pair (`pairs`); `corpus` is the command line
over many pairs (`scripts/llc_corpus.py`, `python -m verilocc.llc.corpus`). Standard library
only: the package imports nothing else of verilocc, so everything above it may use it.
"""
