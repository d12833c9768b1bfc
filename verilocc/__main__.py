"""`python -m verilocc` is the `verilocc` command."""
from verilocc.cli import entry

entry()
