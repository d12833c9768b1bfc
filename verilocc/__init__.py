"""verilocc: verification-first register allocation for AMD GPUs."""

from verilocc import native

__version__ = "0.1.0"
native.install()  # the compiled core, where it is this source's build (`verilocc.native`)
