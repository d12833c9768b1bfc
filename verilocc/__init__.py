"""verilocc: verification-first register allocation for AMD GPUs."""

__version__ = "0.1.0"
