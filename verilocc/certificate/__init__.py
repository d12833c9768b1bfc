"""Certificates: the SMT-LIB obligations of a VERIFIED verdict, written so that an auditor can
re-check them with an independent solver (`verilocc recheck`), and the re-check itself.

- `obligation`: what one obligation is, and what a certificate says it does not cover;
- `smt2`: a printer from z3 terms to SMT-LIB 2 text that z3 and cvc5 both parse;
- `valueflow`: layer 2's claim (which has no solver query of its own) as obligations;
- `witness`: the pairing of the two programs and the value-flow states, for `certcheck` (the
  independent checker beside this package, which shares no code with verilocc) to re-check;
- `write`: the manifest and the files of `verilocc verify --certificate DIR`;
- `recheck`: `verilocc recheck DIR`, hashes and cvc5 (then `certcheck`, from `commands`).
"""
