"""The model loop of DESIGN.md section 6: data, normalisation, a small LM, decoding, feedback.

Data flow: pre-RA MIR -> `problem` (the allocation problem: candidates, conflicts, copy hints
from static analysis) -> `normalise` (dense renumbering, neutral class names, prompt lines) ->
model (`tokenizer`, `tiny`, `train`) -> `decode` (constrained or not) -> assignment text ->
`parse_model_output` -> materialise -> verify -> `feedback` (findings rendered for the next
prompt) -> `loop`. Only `tiny`, `train`, `decode` and `loop` import torch/transformers, and
only when called.
"""
