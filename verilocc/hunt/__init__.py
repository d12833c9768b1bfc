"""Hunting LLVM's own register allocation bugs: let every installed llc allocate, verify, sort.

Data flow: inputs (`inputs`: `.ll`, pre-RA `.mir`, HIP kernels, fuzzer programs) -> installed
LLVMs and what each knows (`llvm`) -> pre/post pairs made in one llc process or by re-reading the
pre file (`pairs`) -> verification of each pair (`check`) -> groups (a) limitation of verilocc,
(b) candidate LLVM bug, (c) harmless anomaly (`triage`) -> the table (`report`) and, for (b),
reproducers reduced by llvm-reduce with verilocc as the interestingness test (`reduce`,
`interesting`). `run` ties the stages together; `commands` is `verilocc hunt`.
"""
