"""`python -m verilocc` is the `verilocc` command."""
import sys

from verilocc.cli import main

sys.exit(main())
