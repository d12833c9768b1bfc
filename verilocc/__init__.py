"""verilocc: verification-first register allocation for AMD GPUs."""

from verilocc import native

__version__ = "0.1.0"
#: Whether the verifier's core runs compiled (`verilocc.native.state`).
NATIVE = native.install()
