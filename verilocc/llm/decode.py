"""Decoding an assignment from a model, one virtual register at a time.

The model reads the header, the feedback of the last counterexample and up to `window - 1`
previous lines (each with its decision), then the current line up to `:` (its listed choices,
`verilocc.llm.choices`), and writes its decision `@j`. The listed choices are recomputed after
every decision from the registers chosen so far, so each sample of a batch has its own lines.

The project's own model decodes all samples of a call as one batch with a key/value cache:
every line of a function has the same number of tokens in every sample, so the samples advance
in lockstep, one forward pass of the new line's tokens per line. The cache holds the header and
feedback once and at most `window - 1` lines; when it is full it is cut back to the header and
the last `window / 2` lines are encoded again (the windows the model was trained on). Each
sample draws from its own generator, seeded by (seed, sample), so a sample's text does not
depend on the other samples of its batch. Other Hugging Face models decode sample by sample
without a cache (their tokenizers split lines unevenly).

Unconstrained, the model's most likely token (or a sample at `temperature`) is taken as it is:
a decision that names no listed choice, or any other word, becomes a `model-output` finding.
With constrained decoding, `RegisterMask` (a transformers `LogitsProcessor`) keeps only the
decisions that name listed choices not ruled out by a counterexample; when there is none the
sample stops at a dead end (the function needs spilling, which an assignment cannot express).

Steering keeps the waves per SIMD of the first fit (`problem.caps`, the tiers the listing draws
from first). The model's earlier choices can leave a later line only registers beyond them, so
that whatever it answers there costs a wave. Such a sample is decoded again from the last line
from which a completion still stays within the caps (`ChoiceTables.completion`: the widest-first
fit's own registers while the sample is on it, else a first fit in program order, so every
register of it is listed when its line comes; found by bisection over the sample's own prefix),
with the completion kept beside it: an answer that is the completion's register, or one the
completion still holds with (`ChoiceTables.keeps`; not while the completion is the widest-first
fit, whose registers are listed only while the sample stays on it), is written; for any other a
new completion is sought, and where there is none the model's next most likely answers are
tried the same cheap way, then the completion's register is written. Samples that keep their
waves are not touched. `Proposal.steered_from` and `overridden` say where and how much;
`verilocc eval` measures the single shot both ways.

Two inputs carry a counterexample into the loop's next round besides the feedback paragraph
and the bans. `keep` names registers to write again: on a line whose virtual register it
names, the decision is the listed choice that is that register, written for the model (it
still reads the line); where that register is no longer listed (an earlier line took another
register) or is banned, the model decides as on any other line. `confine` names virtual
registers whose lines are decoded as constrained decoding decodes them (their decision named
no listed choice in the last round) while the other lines stay unconstrained.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor

from verilocc.analysis.operands import VReg
from verilocc.findings import Finding
from verilocc.llm.choices import Choice, ChoiceTables, State, answer_token
from verilocc.llm.lm import LM
from verilocc.llm.normalise import header_text, line_text, output_finding, resolve
from verilocc.llm.problem import AllocationProblem
from verilocc.target import PhysReg

MAX_FEEDBACK_TOKENS = 256
STEER_TRIES = 3  # the model's answers a steered line tries before the completion's register


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
    text: str  # the model's lines, `%k <line> : @j`
    regs: dict[VReg, PhysReg]
    findings: list[Finding]  # decisions that name no listed choice
    dead_end: str | None = None  # constrained decoding found no register left: why
    masked: list[tuple[int, int]] = field(default_factory=list)  # (allowed, vocabulary) per constrained step
    decisions: list[str] = field(default_factory=list)  # per line, as written
    steered_from: int | None = None  # the line from which decoding was steered to keep the waves
    overridden: int = 0  # steered lines whose answer is not the model's first (`_Batch.run`)


def reads_feedback(lm: LM) -> bool:
    """Whether the model reads the feedback paragraph in its context: models trained on
    counterexamples (`feedback_in_context` in their metadata) and other Hugging Face models
    do; a model trained without them gets the findings only as `!` marks on its lines."""
    return bool(lm.meta.get("feedback_in_context", not lm.own))


def prompt_head(problem: AllocationProblem, feedback: str) -> str:
    head = header_text(problem.target, problem)
    return head + ("\n" + feedback if feedback else "")


def propose(lm: LM, problem: AllocationProblem, *, constrained: bool, feedback: str = "",
            bans: Mapping[VReg, Sequence[PhysReg]] | None = None, temperature: float = 0.0, seed: int = 0,
            file: str = "<model>", tables: ChoiceTables | None = None,
            keep: Mapping[VReg, PhysReg] | None = None, confine: Collection[VReg] = (),
            steer: bool = True) -> Proposal:
    """One proposal (greedy at temperature 0)."""
    return propose_many(lm, problem, samples=1, constrained=constrained, feedback=feedback, bans=bans,
                        temperature=temperature, seed=seed, file=file, tables=tables, greedy_first=False,
                        keep=keep, confine=confine, steer=steer)[0]


def propose_many(lm: LM, problem: AllocationProblem, *, samples: int, constrained: bool, feedback: str = "",
                 bans: Mapping[VReg, Sequence[PhysReg]] | None = None, temperature: float = 0.7, seed: int = 0,
                 file: str = "<model>", tables: ChoiceTables | None = None, greedy_first: bool = True,
                 keep: Mapping[VReg, PhysReg] | None = None, confine: Collection[VReg] = (),
                 steer: bool = True) -> list[Proposal]:
    """`samples` proposals: sample s draws at `temperature` from generator (seed, s); with
    `greedy_first` sample 0 is greedy. `keep`: registers written again where still listed;
    `confine`: lines decoded constrained in unconstrained decoding; `steer`: a sample that
    costs a wave is decoded again from where it could still keep it, steered (`_Batch.run`)."""
    tables = tables or ChoiceTables(problem)
    temps = [0.0 if (s == 0 and greedy_first) else temperature for s in range(samples)]
    rngs = [random.Random(f"{seed}:{s}") for s in range(samples)]
    head = lm.bos + lm.encode(header_text(problem.target, problem)) + lm.line_end
    if feedback and reads_feedback(lm):
        head += lm.encode(feedback)[:MAX_FEEDBACK_TOKENS] + lm.line_end
    decoder = _Batch(lm, problem, tables, head, temps, rngs, constrained, dict(bans or {}), file, dict(keep or {}),
                     frozenset(confine))
    decoder.run(steer)
    return decoder.proposals()


class _Batch:
    """The samples of one call: their states, lines and decisions."""

    def __init__(self, lm: LM, problem: AllocationProblem, tables: ChoiceTables, head: list[int],
                 temps: list[float], rngs: list[random.Random], constrained: bool,
                 bans: dict[VReg, Sequence[PhysReg]], file: str, keep: dict[VReg, PhysReg],
                 confine: frozenset[VReg]) -> None:
        self.lm, self.problem, self.tables, self.head = lm, problem, tables, head
        self.temps, self.rngs, self.constrained, self.bans, self.file = temps, rngs, constrained, bans, file
        self.keep, self.confine = keep, confine
        n = len(temps)
        self.states: list[State] = [tables.start() for _ in range(n)]
        self.lines: list[list[str]] = [[] for _ in range(n)]
        self.decisions: list[list[str]] = [[] for _ in range(n)]
        self.chosen: list[list[PhysReg | None]] = [[] for _ in range(n)]  # per line, the register taken
        self.history: list[list[list[int]]] = [[] for _ in range(n)]  # per line, its token ids
        self.findings: list[list[tuple[int, Finding]]] = [[] for _ in range(n)]  # (line, finding)
        self.dead: list[str | None] = [None] * n
        self.masked: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]  # (line, allowed, vocabulary)
        self.beyond: list[int | None] = [None] * n  # the first line listed beyond the first fit's waves
        self.plan: list[dict[int, int] | None] = [None] * n  # steered samples: a completion that keeps them
        self.steered_from: list[int | None] = [None] * n
        self.overridden = [0] * n
        self._prefix: object | None = None

    # ---- what every path shares ------------------------------------------------------------
    def line(self, s: int, k: int) -> tuple[str, list[Choice]]:
        text, listed = line_text(self.problem, self.tables, self.states[s], k, self.bans.get(self.problem.order[k], ()))
        if self.beyond[s] is None and self.dead[s] is None and self.tables.beyond_caps(listed):
            self.beyond[s] = k
        return text, listed

    def allowed_answers(self, listed: list[Choice]) -> list[int]:
        return [j for j, c in enumerate(listed) if c.kind != "!"]

    def masks(self, s: int, k: int, listed: list[Choice]) -> bool:
        """Whether line k of sample s draws among its allowed answers: constrained decoding,
        or a `confine`d line (unconstrained, a confined line with none allowed draws freely)."""
        if self.dead[s] is not None:
            return False
        if self.constrained:
            return True
        return self.problem.order[k] in self.confine and bool(self.allowed_answers(listed))

    def kept(self, s: int, k: int, listed: list[Choice]) -> str | None:
        """The decision that writes `keep`'s register on line k again, if it is listed."""
        reg = self.keep.get(self.problem.order[k])
        if reg is None or self.dead[s] is not None:
            return None
        return next((answer_token(j) for j, c in enumerate(listed) if c.reg == reg and c.kind != "!"), None)

    def record(self, s: int, k: int, prefix: str, listed: list[Choice], answer: str, ids: list[int]) -> None:
        v = self.problem.order[k]
        self.lines[s].append(f"{prefix} : {answer}")
        self.decisions[s].append(answer)
        self.history[s].append(ids)
        if self.dead[s] is not None:
            self.chosen[s].append(None)
            return
        choice, why = resolve(answer, listed, v)
        if choice is None:
            self.findings[s].append((k, output_finding(self.problem, self.file, k, why or "")))
            self.chosen[s].append(None)
        else:
            self.tables.take(self.states[s], k, choice.reg)
            self.chosen[s].append(choice.reg)

    def dead_end(self, s: int, k: int) -> None:
        v = self.problem.order[k]
        self.dead[s] = (f"no register of class {self.problem.info[v].cls.name} is left for %{v} "
                        f"without a conflict: the function needs spilling or other choices before it")

    def draw(self, logits: torch.Tensor, s: int) -> int:
        """A token from one row of logits: argmax at temperature 0, else inverse CDF with the
        sample's own generator."""
        t = self.temps[s]
        if t <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits.float() / t, dim=-1)
        cdf = torch.cumsum(probs, dim=-1)
        u = self.rngs[s].random() * float(cdf[-1])
        return int(min(int(torch.searchsorted(cdf, torch.tensor([u]))[0]), logits.shape[-1] - 1))

    def proposals(self) -> list[Proposal]:
        out = []
        for s in range(len(self.temps)):
            text = "\n".join(self.lines[s]) + ("\n" if self.lines[s] else "")
            out.append(Proposal(text, dict(self.states[s].regs), [f for _, f in self.findings[s]], self.dead[s],
                                [(a, b) for _, a, b in self.masked[s]], self.decisions[s], self.steered_from[s],
                                self.overridden[s]))
        return out

    # ---- steering: keeping the first fit's waves -------------------------------------------
    def run(self, steer: bool) -> None:
        """Decode every sample. With `steer`, a sample with a line whose every answer costs a
        wave (`ChoiceTables.beyond_caps`) goes back to the last line from which a first fit
        still keeps the first fit's waves (`ChoiceTables.completion`; found by bisection) and
        is decoded again from there, steered (`steered`): where the model's answer leaves no
        such completion, its next most likely answers are tried (`STEER_TRIES` in all), then
        the completion's own register is written."""
        decode = self.run_cached if self.lm.own else self.run_uncached
        decode(list(range(len(self.temps))), 0)
        if not steer:
            return
        for s in range(len(self.temps)):
            k = self.beyond[s]
            if k is None or self.dead[s] is not None:
                continue
            lo, plan = 0, self.tables.completion(self.tables.start(), 0)
            if plan is None:
                continue
            hi = k  # no completion keeps the waves from here
            while hi - lo > 1:
                mid = (lo + hi) // 2
                got = self.tables.completion(self.replayed(s, mid), mid)
                if got is None:
                    hi = mid
                else:
                    lo, plan = mid, got
            self.rewind(s, lo)
            self.plan[s], self.steered_from[s] = plan, lo
            decode([s], lo)

    def replayed(self, s: int, k: int) -> State:
        """Sample s's state before line k."""
        state = self.tables.start()
        for i, reg in enumerate(self.chosen[s][:k]):
            self.tables.take(state, i, reg)
        return state

    def steered(self, s: int, k: int, listed: list[Choice], ranked: list[int]) -> int | None:
        """For a steered sample at line k, the listed choice to write: the first of `ranked`
        (listed choices, the model's most likely first; at most `STEER_TRIES`) after which a
        completion keeps the waves (the kept one still holds, or, for the first, a new one is
        found); else the completion's own. None: not steered, or no listed answer keeps them."""
        plan = self.plan[s]
        if plan is None or self.dead[s] is not None or k not in plan:
            return None
        own = next((j for j, c in enumerate(listed) if c.reg.units[0] == plan[k] and c.kind != "!"), None)
        # The completion's own register when listed; else (a counterexample ruled it out, or
        # answers the plan kept put it above the lowest free) every listed answer is tried. An
        # answer is taken when the plan holds with it (`keeps`), or, for the model's first and
        # where the completion's register is not listed, when a new completion exists (a first
        # fit: the costly check).
        tries = ranked[:STEER_TRIES] if own is not None else ranked
        fit = self.problem.fit
        # Off the widest-tuples-first fit its registers are no longer listed: while the plan is
        # that fit, an answer that leaves it needs a new completion.
        on_fit = bool(fit) and self.states[s].on_fit and plan[k] == fit[k]
        for i, j in enumerate(tries):
            if j == own:
                break
            if not on_fit and self.tables.keeps(plan, k, listed[j].reg):
                plan[k] = listed[j].reg.units[0]
                own = j
                break
            if i and own is not None:
                continue
            trial = self.states[s].copy()
            self.tables.take(trial, k, listed[j].reg)
            got = self.tables.completion(trial, k + 1)
            if got is not None:
                self.plan[s] = got
                own = j
                break
        if own is not None and (not ranked or own != ranked[0]):
            self.overridden[s] += 1
        return own

    def steer_answer(self, s: int, k: int, listed: list[Choice], answer: str, scores: dict[int, float]) -> str:
        """The answer a steered sample writes on line k instead of `answer` (the same where it
        keeps the waves, or names no listed choice); `scores`: the model's score per listed
        choice, which ranks the others (none: the completion's register comes next)."""
        if self.plan[s] is None:
            return answer
        choice, _ = resolve(answer, listed, self.problem.order[k])
        if choice is None:
            return answer
        first = next(j for j, c in enumerate(listed) if c is choice)
        others = sorted((j for j in self.allowed_answers(listed) if j != first and j in scores), key=lambda j: -scores[j])
        j = self.steered(s, k, listed, [first] + others)
        return answer if j is None or j == first else answer_token(j)

    def rewind(self, s: int, k: int) -> None:
        """Sample s back to before line k."""
        for xs in (self.lines, self.decisions, self.chosen, self.history):
            del xs[s][k:]
        self.findings[s] = [(i, f) for i, f in self.findings[s] if i < k]
        self.masked[s] = [m for m in self.masked[s] if m[0] < k]
        self.states[s] = self.replayed(s, k)
        self.dead[s], self.beyond[s], self.plan[s] = None, None, None

    # ---- the project's own model: one batch, a key/value cache -------------------------------
    @torch.no_grad()
    def run_cached(self, rows: list[int], start: int) -> None:
        """Decode lines `start`.. of samples `rows` (their lines before `start` decided) in lockstep."""
        from verilocc.llm.kvcache import CachedLlama

        lm = self.lm
        nl = lm.line_end
        window = max(2, lm.window)
        capacity = len(self.head) + window * 32 + 64
        if self._prefix is None:
            self._prefix = CachedLlama(lm.model, capacity)
            self._prefix.reset(1)
            self._prefix.forward(torch.tensor([self.head]))
        prefix = self._prefix
        assert isinstance(prefix, CachedLlama)
        cache = CachedLlama(lm.model, capacity)
        cache.reset(len(rows))
        in_cache = -1  # complete lines in the cache; -1: not built yet
        for k in range(start, len(self.problem.order)):
            texts = [self.line(s, k) for s in rows]
            ids = [lm.encode(prefix_text + " :") for prefix_text, _ in texts]
            if in_cache < 0 or in_cache >= window - 1:
                # (re)build: the header, then the last window/2 complete lines of each sample
                keep = min(k, window // 2)
                cache.copy_prefix(prefix, len(self.head))
                batch = [[t for line in self.history[s][k - keep:k] for t in line] + ids[i] for i, s in enumerate(rows)]
                in_cache = keep
            else:
                batch = [self.history[s][-1][-1 - len(nl):] + ids[i] for i, s in enumerate(rows)]
            logits = cache.forward(torch.tensor(batch, dtype=torch.long))
            for i, s in enumerate(rows):
                prefix_text, listed = texts[i]
                again = self.kept(s, k, listed)
                tok = self.lm.answer_ids(again)[0] if again else self._choose(logits[i], s, k, listed)
                answer = lm.decode([tok]).strip() or "<empty>"
                if self.plan[s] is not None:
                    scores = {j: float(logits[i][lm.answer_ids(answer_token(j))[0]]) for j in range(len(listed))}
                    steered = self.steer_answer(s, k, listed, answer, scores)
                    if steered != answer:
                        answer, tok = steered, lm.answer_ids(steered)[0]
                self.record(s, k, prefix_text, listed, answer, ids[i] + [tok] + nl)
            in_cache += 1

    def _choose(self, logits: torch.Tensor, s: int, k: int, listed: list[Choice]) -> int:
        if not self.masks(s, k, listed):
            return self.draw(logits, s)
        ok = self.allowed_answers(listed)
        if not ok:
            self.dead_end(s, k)
            return self.draw(logits, s)
        allowed = [self.lm.answer_ids(answer_token(j))[0] for j in ok]
        self.masked[s].append((k, len(allowed), int(logits.shape[-1])))
        masked = RegisterMask(allowed)(torch.zeros(1, 1, dtype=torch.long), logits.unsqueeze(0))[0]  # type: ignore[arg-type]
        return self.draw(masked, s)

    # ---- other Hugging Face models: sample by sample, no cache -------------------------------
    @torch.no_grad()
    def run_uncached(self, rows: list[int], start: int) -> None:
        """Decode lines `start`.. of samples `rows`, sample by sample."""
        lm = self.lm
        nl = set(lm.line_end)
        for s in rows:
            for k in range(start, len(self.problem.order)):
                prefix, listed = self.line(s, k)
                history = self.history[s][max(0, k - (lm.window - 1)):]
                ctx = self.head + [t for ids in history for t in ids] + lm.encode(prefix + " :")
                got: list[int] = []
                again = self.kept(s, k, listed)
                if again:
                    got = self.lm.answer_ids(again)
                elif self.masks(s, k, listed):
                    ok = self.allowed_answers(listed)
                    if not ok:
                        self.dead_end(s, k)
                    else:
                        got = self._pick_by_prefix(ctx, {answer_token(j): lm.answer_ids(answer_token(j)) for j in ok}, s, k)
                if not got:
                    for _ in range(6):
                        tok = self.draw(lm.next_logits(ctx + got), s)
                        if tok in nl:
                            break
                        got.append(tok)
                answer = lm.decode(got).strip().split("\n")[0].strip() or "<empty>"
                steered = self.steer_answer(s, k, listed, answer, {})
                if steered != answer:
                    answer, got = steered, lm.answer_ids(steered)
                self.record(s, k, prefix, listed, answer, lm.encode(prefix + " :") + got + lm.line_end)

    def _pick_by_prefix(self, ctx: list[int], options: dict[str, list[int]], s: int, k: int) -> list[int]:
        """Constrained decoding of an answer that takes several tokens: through the prefix tree
        of the allowed answers' token sequences."""
        got: list[int] = []
        live = dict(options)
        while True:
            complete = [t for t, ids in live.items() if ids == got]
            longer = {t: ids for t, ids in live.items() if len(ids) > len(got) and ids[: len(got)] == got}
            if complete and not longer:
                return got
            nxt = sorted({ids[len(got)] for ids in longer.values()})
            logits = self.lm.next_logits(ctx + got)
            self.masked[s].append((k, len(nxt), int(logits.shape[-1])))
            scores = RegisterMask(nxt)(torch.tensor([ctx + got]), logits.unsqueeze(0))[0]  # type: ignore[arg-type]
            got.append(self.draw(scores, s))
            live = {t: ids for t, ids in live.items() if ids[: len(got)] == got}

