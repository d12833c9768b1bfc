"""The model loop (docs/allocate.md, "The model loop"): data, normalisation, a small LM, decoding,
feedback.

Data flow: pre-RA MIR -> `problem` (the allocation problem: candidates, conflicts, copy hints,
dying values from static analysis) -> `choices` (per virtual register, given the registers
chosen before it, the listed choices a decision picks from) -> `normalise` (dense renumbering,
neutral class names, prompt lines, decisions `@j` read back) -> model (`tokenizer`, `lm`,
`train`; `kvcache` for decoding) -> `decode` (constrained or not, batched samples) ->
assignment -> materialise -> verify -> feedback (findings rendered for the next prompt, bans
marked on lines) -> `loop`; `dataset` and `evaluate` around it. Only `lm`, `kvcache`,
`train`, `decode`, `loop` and `evaluate` import torch/transformers, and only model commands
import them.
"""

from pathlib import Path

#: The project's small allocation model, shipped inside the package (docs/allocate.md: how it was trained).
DEFAULT_MODEL = Path(__file__).resolve().parent / "data" / "verilocc-small"

# Kernel sources kept out of training (`llm.dataset`); here so that the command line's
# defaults need not import the dataset code.
HELD_OUT_SOURCES = ("flash_attn.hip", "sgemm_tiled.hip", "softmax.hip")
