#!/usr/bin/env python3
"""Make pre/post register-allocation MIR pairs with a given llc: `verilocc.llc.corpus`.

    python3 scripts/llc_corpus.py --llc llc-19 --hip examples/kernels --clang clang-19 --out /tmp/examples
    python3 scripts/llc_corpus.py --llc llc-22 --corpus ../shared/corpus --out /tmp/llc22 -j 2

`--help` lists the options; `verilocc/llc/pairs.py` says how each pair is made.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout, installed or not

from verilocc.llc.corpus import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
