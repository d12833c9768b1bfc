"""Decoding an assignment from a model, one virtual register at a time.

The model reads the header, the feedback of the last counterexample and the previous
`window` lines (each with its answer), then the current line up to `:`, and writes the
register. With constrained decoding, `RegisterMask` (a transformers `LogitsProcessor`) keeps
only the tokens that continue a register the problem still allows: class, tuple alignment,
budget, reservations, conflicts with the choices already made, and the registers a
counterexample banned. A register that takes several tokens (a generic tokenizer) is decoded
through the prefix tree of the allowed registers' token sequences. Without constraints the
model's most likely tokens are taken as they are, up to the end of the line; whatever it
writes goes through `parse_model_output`, where malformed text becomes a finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor

from verilocc.analysis.operands import VReg
from verilocc.errors import TargetError
from verilocc.findings import Finding
from verilocc.llm.lm import LM
from verilocc.llm.normalise import header_text, line_prefix, parse_model_output, reg_token, token_register
from verilocc.llm.problem import AllocationProblem
from verilocc.target import PhysReg

MAX_FEEDBACK_TOKENS = 256


class RegisterMask(LogitsProcessor):
    """Sets every score outside `allowed` to -inf."""

    def __init__(self, allowed: Sequence[int]) -> None:
        self.allowed = torch.tensor(sorted(set(allowed)), dtype=torch.long)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        masked = torch.full_like(scores, float("-inf"))
        masked[..., self.allowed] = scores[..., self.allowed]
        return masked  # type: ignore[return-value]


@dataclass
class Proposal:
    text: str  # the model's lines, `%k <hints> : R`
    regs: dict[VReg, PhysReg]
    findings: list[Finding]  # from parsing the text
    dead_end: str | None = None  # constrained decoding found no register left: why
    masked: list[tuple[int, int]] = field(default_factory=list)  # (allowed, vocabulary) per constrained step


def reads_feedback(lm: LM) -> bool:
    """Whether the model reads the feedback paragraph in its context. The project's small
    model was trained without it and gets worse with it (measured: round 2 of the loop on
    softmax_row went from 15 to 285 errors); it reads the same findings as `! R` bans on the
    lines they concern, which it was trained on. Other models read both."""
    return bool(lm.meta.get("feedback_in_context", not lm.own))


def prompt_head(problem: AllocationProblem, feedback: str) -> str:
    head = header_text(problem.target, problem)
    return head + ("\n" + feedback if feedback else "")


def propose(lm: LM, problem: AllocationProblem, *, constrained: bool, feedback: str = "",
            bans: Mapping[VReg, Sequence[PhysReg]] | None = None, temperature: float = 0.0, seed: int = 0,
            file: str = "<model>") -> Proposal:
    gen = torch.Generator().manual_seed(seed)
    bans = bans or {}
    head_ids = lm.bos + lm.encode(header_text(problem.target, problem)) + lm.line_end
    if feedback and reads_feedback(lm):
        head_ids += lm.encode(feedback)[:MAX_FEEDBACK_TOKENS] + lm.line_end
    nl = lm.line_end
    chosen: dict[VReg, PhysReg] = {}
    history: list[list[int]] = []
    out_lines: list[str] = []
    masked: list[tuple[int, int]] = []
    for k, v in enumerate(problem.order):
        prefix, allowed = line_prefix(problem, k, v, chosen, list(bans.get(v, ())))
        ctx = head_ids + [t for ids in history[-(lm.window - 1):] for t in ids] + lm.encode(prefix + " :")
        if constrained:
            if not allowed:
                text = "\n".join(out_lines)
                why = (f"no register of class {problem.info[v].cls.name} is left for %{v} "
                       f"without a conflict: the function needs spilling or another order")
                return Proposal(text, chosen, [], dead_end=why, masked=masked)
            options = {reg_token(r): (r, lm.answer_ids(reg_token(r))) for r in allowed}
            token, ids = _pick_constrained(lm, ctx, options, temperature, gen, masked)
            chosen[v] = options[token][0]
        else:
            ids = _free_answer(lm, ctx, temperature, gen)
            token = lm.decode(ids).strip().split("\n")[0].strip()
            try:
                chosen[v] = token_register(token.split()[0] if token else "", problem.info[v].cls)
            except (TargetError, IndexError):
                pass
        out_lines.append(f"{prefix} : {token}")
        history.append(lm.encode(prefix + " :") + ids + nl)
    text = "\n".join(out_lines) + "\n"
    regs, findings = parse_model_output(text, problem, file)
    return Proposal(text, regs, findings, masked=masked)


def _sample(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> int:
    if temperature <= 0:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=gen))


def _pick_constrained(lm: LM, ctx: list[int], options: dict[str, tuple[PhysReg, list[int]]], temperature: float,
                      gen: torch.Generator, masked: list[tuple[int, int]]) -> tuple[str, list[int]]:
    got: list[int] = []
    live = dict(options)
    while True:
        complete = [t for t, (_, ids) in live.items() if ids == got]
        longer = {t: ids for t, (_, ids) in live.items() if len(ids) > len(got) and ids[: len(got)] == got}
        if complete and not longer:
            return complete[0], got
        nxt = sorted({ids[len(got)] for ids in longer.values()})
        logits = lm.next_logits(ctx + got)
        masked.append((len(nxt), int(logits.shape[-1])))
        scores = RegisterMask(nxt)(torch.tensor([ctx + got]), logits.unsqueeze(0))[0]  # type: ignore[arg-type]
        tok = _sample(scores, temperature, gen)
        got.append(tok)
        live = {t: o for t, o in live.items() if o[1][: len(got)] == got}


def _free_answer(lm: LM, ctx: list[int], temperature: float, gen: torch.Generator, limit: int = 6) -> list[int]:
    nl = set(lm.line_end)
    got: list[int] = []
    for _ in range(limit if not lm.own else 1):
        tok = _sample(lm.next_logits(ctx + got), temperature, gen)
        if tok in nl:
            break
        got.append(tok)
    return got
