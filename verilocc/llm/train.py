"""`verilocc train`: fit a causal LM to the normalised lines of the training split.

A training window is the header (with the feedback paragraph of a feedback example) and up to
`window` consecutive lines of one function, each ending in LLVM's decision; the loss is the
cross-entropy of the decision tokens only (the model is never asked to predict the lines). Windows start at every `window`-th line, shifted
by a seeded random offset each epoch. The learning rate decays linearly over `--epochs` when
given, and the run is the same on any machine at any load (`--minutes` only stops it early, and
says so); without `--epochs` it decays over `--minutes` of wall clock. One thread by default:
the machine is shared, and two contended threads were measured 6x slower.

Options that aim at the error the model makes on held-out functions, an answer that names no
listed choice on one line of a long function (docs/allocate.md, "The error the model still
makes"):
- `listed_loss`: a line whose answer is `?` (LLVM's register is not among the listed choices)
  has no decision to learn, so without this the model's output there is never trained. With
  it, each such line adds -log of the probability the model gives its listed choices together
  (not empty, not banned): whichever it takes, the answer is one of them;
- `shift_ids`: in that share of the windows (drawn afresh each epoch) every line's dense id
  `%k` is shifted by one offset, so that the window's first id lands anywhere from 0 to twice
  the longest training function (within the ids the tokenizer writes as one word). A line's id
  is its position in the function; it says nothing about the answer that the lines' order
  does not, yet the embedding of a rarely seen high id decided answers on held-out lines.
  A feedback paragraph is not renumbered (it names lines by number, which then no longer
  match the ids);
- `unlikelihood`: every answer position adds -log(1 - p), p the probability the model gives
  together to its line's slots that cannot be the answer (empty or banned `!`);
- `empty_rate`: in that share of the answered lines (drawn afresh each epoch) the listed
  choices after a random slot past the answer are emptied, as when fewer registers are free.
- `mark_answers`: in that share of the answered lines with another listed choice (drawn afresh
  each epoch) the answer's own slot is marked `!`, as a counterexample's ban marks the register
  a proposal took, and the line's answer is withdrawn (`?` in the context): with `listed_loss`
  the model is trained towards the other listed choices there. The dataset's own
  marks fall on choices that are not the answer, which a model never picks anyway, so they
  teach nothing about reading a mark (`bench/model_eval/reads_counterexamples.py` measures it).
`make model` trains with the first three (`--shift-ids 0.5`), then fine-tunes those weights
(`--base`) for 2 epochs with `mark_answers` 0.5 as well; `empty_rate` is off, since it did not
make a better model in the runs measured. A fine-tune's `verilocc.json` keeps its base's command
under `base`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from verilocc.llm.choices import NO_CHOICE, SLOTS
from verilocc.llm.dataset import read_examples
from verilocc.llm.lm import FORMAT, LM, save_lm

IGNORE = -100


# A line drawn for a change in one window (`emptied`, `marked`, `shifted`): its prefix, its
# invalid answers, and None, or for a line whose answer is withdrawn its valid answers.
Replaced = tuple[list[int], list[int], list[int] | None]


@dataclass
class Encoded:
    header: list[int]
    prefixes: list[list[int]]  # each line up to and including " :"
    answers: list[list[int] | None]  # None: no answer to learn ("?")
    unknown: list[int]  # the "?" that stands in the context for a line without answer
    invalid: list[list[int]]  # per line, the answer tokens of its empty and banned slots
    valid: list[list[int]]  # per line, the answer tokens of its other slots (its listed choices)


def decision_tokens(lm: LM) -> list[int]:
    """The token of each decision `@0`..`@7`, or [] when the tokenizer does not write each as
    one token of its own (then no slot is pushed down: `invalid_answers`)."""
    ids = [lm.answer_ids(f"@{k}") for k in range(SLOTS)]
    if any(len(x) != 1 for x in ids) or len({x[0] for x in ids}) != SLOTS:
        return []
    return [x[0] for x in ids]


def invalid_answers(decisions: list[int], line: str) -> list[int]:
    """The decision tokens (`decision_tokens`) of the slots of `line` that cannot be its
    answer: empty or banned."""
    return [t for t, w in zip(decisions, line.split()[-SLOTS:]) if _cannot_be_answer(w)]


def valid_answers(decisions: list[int], line: str) -> list[int]:
    """The decision tokens of the other slots of `line`: its listed choices that are not banned."""
    return [t for t, w in zip(decisions, line.split()[-SLOTS:]) if not _cannot_be_answer(w)]


def _cannot_be_answer(slot: str) -> bool:
    return slot == NO_CHOICE or slot.startswith("!")


def with_empty_slots(line: str, answer: str, rng: random.Random) -> str | None:
    """`line` with its listed choices emptied from a random slot after `answer`'s on, or None
    when every slot after the answer is empty already (or the answer is not a listed choice)."""
    words = line.split()
    if not answer.startswith("@") or not answer[1:].isdigit() or len(words) < SLOTS:
        return None
    first = len(words) - SLOTS
    a = int(answer[1:])
    filled = [k for k in range(a + 1, SLOTS) if words[first + k] != NO_CHOICE]
    if not filled:
        return None
    for k in range(rng.choice(filled), SLOTS):
        words[first + k] = NO_CHOICE
    return " ".join(words)


def with_answer_marked(line: str, answer: str) -> str | None:
    """`line` with the slot of `answer` marked `!` (banned), or None when the answer is not a
    listed choice or no other listed choice would be left."""
    words = line.split()
    if not answer.startswith("@") or not answer[1:].isdigit() or len(words) < SLOTS:
        return None
    first = len(words) - SLOTS
    a = int(answer[1:])
    slot = words[first + a] if a < SLOTS else NO_CHOICE
    if _cannot_be_answer(slot) or all(_cannot_be_answer(w) for k, w in enumerate(words[first:]) if k != a):
        return None
    words[first + a] = "!" + slot[1:]
    return " ".join(words)


def emptied(lm: LM, ex: dict[str, Any], start: int, stop: int, rng: random.Random,
            rate: float, decisions: list[int]) -> dict[int, Replaced]:
    """The lines of `start:stop` drawn, each with probability `rate`, for `with_empty_slots`."""
    out: dict[int, Replaced] = {}
    if rate <= 0:
        return out
    for i in range(start, stop):
        if rng.random() < rate:
            line = with_empty_slots(str(ex["lines"][i]), str(ex["answers"][i]), rng)
            if line is not None:
                out[i] = (lm.encode(f"{line} :"), invalid_answers(decisions, line), None)
    return out


def marked(lm: LM, ex: dict[str, Any], start: int, stop: int, rng: random.Random, rate: float,
           decisions: list[int], replaced: dict[int, Replaced]) -> dict[int, Replaced]:
    """`replaced` and the lines of `start:stop` not in it drawn, each with probability `rate`,
    for `with_answer_marked`: their answers withdrawn, their other listed choices valid."""
    if rate <= 0 or not decisions:
        return replaced
    out = dict(replaced)
    for i in range(start, stop):
        if i not in out and rng.random() < rate:
            line = with_answer_marked(str(ex["lines"][i]), str(ex["answers"][i]))
            if line is not None:
                out[i] = (lm.encode(f"{line} :"), invalid_answers(decisions, line), valid_answers(decisions, line))
    return out


def id_tokens(lm: LM, limit: int) -> list[int]:
    """The token of each dense id `%0`, `%1`, ... below `limit`, up to the first id the
    tokenizer does not write as one word of its own ([] when `%0` is not: ids are not shifted)."""
    out: list[int] = []
    seen: set[int] = set()
    for k in range(limit):
        got = lm.encode(f"%{k}")
        if len(got) != 1 or got[0] in seen or (lm.own and got[0] == lm.tokenizer.unk):
            break
        out.append(got[0])
        seen.add(got[0])
    return out


def shifted(enc: Encoded, start: int, stop: int, ids: list[int], rng: random.Random,
            replaced: dict[int, Replaced]) -> dict[int, Replaced]:
    """Prefixes and invalid answers of lines `start:stop` (`replaced` standing for some, as in
    `window_ids`) with every line's dense id shifted so that the first lands on a random id of
    `ids`; `replaced` unchanged when the window does not fit in `ids`, or a line does not begin
    with its own id (line i with `%i`, as `normalise.line_text` writes it)."""
    if stop > len(ids) or any(enc.prefixes[i][:1] != [ids[i]] for i in range(start, stop)):
        return replaced
    to = rng.randrange(len(ids) - (stop - start) + 1)
    out: dict[int, Replaced] = {}
    for i in range(start, stop):
        prefix, invalid, withdrawn = replaced.get(i, (enc.prefixes[i], enc.invalid[i], None))
        out[i] = ([ids[to + i - start]] + prefix[1:], invalid, withdrawn)
    return out


def encode_example(lm: LM, ex: dict[str, Any]) -> Encoded:
    from verilocc.llm.decode import MAX_FEEDBACK_TOKENS

    header = lm.bos + lm.encode(str(ex["header"])) + lm.line_end
    if ex.get("feedback"):
        header += lm.encode(str(ex["feedback"]))[:MAX_FEEDBACK_TOKENS] + lm.line_end
    prefixes = [lm.encode(f"{line} :") for line in ex["lines"]]
    answers = [None if a == "?" else lm.answer_ids(str(a)) for a in ex["answers"]]
    decisions = decision_tokens(lm)
    return Encoded(header, prefixes, answers, lm.answer_ids("?"), [invalid_answers(decisions, str(x)) for x in ex["lines"]],
                   [valid_answers(decisions, str(x)) for x in ex["lines"]])


def window_ids(enc: Encoded, start: int, stop: int, nl: list[int],
               replaced: dict[int, Replaced] | None = None,
               ) -> tuple[list[int], list[int], list[tuple[int, int]], list[tuple[int, list[int]]]]:
    """Token ids and labels of lines `start:stop` after the header, (position, token) of the
    invalid answers at each answer position, and (position, listed choices' tokens) of each line
    whose answer is `?` (or withdrawn) and that lists a choice; `replaced` stands for some lines
    (`emptied`, `marked`, `shifted`)."""
    ids = list(enc.header)
    labels = [IGNORE] * len(ids)
    bad: list[tuple[int, int]] = []
    unanswered: list[tuple[int, list[int]]] = []
    for i in range(start, stop):
        prefix, invalid, withdrawn = (replaced or {}).get(i, (enc.prefixes[i], enc.invalid[i], None))
        ids += prefix
        labels += [IGNORE] * len(prefix)
        ans = enc.answers[i] if withdrawn is None else None
        if ans is None:  # LLVM chose no listed choice (or split, spilled it; or it is marked): context only
            valid = enc.valid[i] if withdrawn is None else withdrawn
            if valid:
                unanswered.append((len(ids) - 1, valid))
            ids += enc.unknown + nl
            labels += [IGNORE] * (len(enc.unknown) + len(nl))
            continue
        # the last prefix position predicts the first answer token, and so on
        labels[-1] = ans[0]
        bad.extend((len(labels) - 1, t) for t in invalid if t != ans[0])
        for k, a in enumerate(ans):
            ids.append(a)
            labels.append(ans[k + 1] if k + 1 < len(ans) else IGNORE)
        ids += nl
        labels += [IGNORE] * len(nl)
    return ids, labels, bad, unanswered


def answer_loss(lm: LM, ids: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor,
                bad: list[tuple[int, int, int]] | None = None,
                unanswered: list[tuple[int, int, list[int]]] | None = None) -> tuple[torch.Tensor, int, int]:
    """Cross-entropy at answer positions, plus the mean unlikelihood of the invalid answers
    `bad` ((row, position, token) at answer positions); with `unanswered` ((row, position,
    listed choices' tokens) of lines answered `?`), the mean over both kinds of position of
    -log p(answer) and -log p(any listed choice); (loss, answer positions, correct)."""
    model = lm.model
    if hasattr(model, "get_base_model"):  # peft: LoRA layers live inside the base model's modules
        model = model.get_base_model()
    keep = labels != IGNORE
    extra = None
    if hasattr(model, "model") and hasattr(model, "lm_head"):
        hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        logits = model.lm_head(hidden[keep])
        if unanswered:
            extra = model.lm_head(hidden[[r for r, _, _ in unanswered], [c for _, c, _ in unanswered]])
    else:
        full = model(input_ids=ids, attention_mask=mask).logits
        logits = full[keep]
        if unanswered:
            extra = full[[r for r, _, _ in unanswered], [c for _, c, _ in unanswered]]
    target = labels[keep]
    loss = torch.nn.functional.cross_entropy(logits.float(), target)
    if extra is not None and unanswered:
        listed = torch.zeros(extra.shape, dtype=torch.bool)
        for k, (_, _, choices) in enumerate(unanswered):
            listed[k, choices] = True
        scores = extra.float()
        nll = scores.logsumexp(-1) - scores.masked_fill(~listed, float("-inf")).logsumexp(-1)
        n = int(target.numel())
        loss = (loss * n + nll.sum()) / (n + len(unanswered))
    if bad:
        at = keep.flatten().cumsum(0) - 1  # flat position -> row of `logits`
        width = labels.shape[1]
        rows = at[torch.tensor([r * width + c for r, c, _ in bad])]
        toks = torch.tensor([t for _, _, t in bad])
        probs = torch.softmax(logits.float(), dim=-1)
        p_bad = torch.zeros(logits.shape[0]).index_add_(0, rows, probs[rows, toks])
        hit = torch.unique(rows)
        loss = loss + (-torch.log1p(-p_bad[hit].clamp(max=1 - 1e-6))).mean()
    correct = int((logits.argmax(-1) == target).sum())
    return loss, int(target.numel()), correct


def train(lm: LM, data: Path, out: Path, *, minutes: float, epochs: int | None, batch: int, lr: float, seed: int,
          threads: int, bf16: bool, log: Callable[[str], None], command: str, max_examples: int | None = None,
          empty_rate: float = 0.0, unlikelihood: bool = False, listed_loss: bool = False,
          shift_ids: float = 0.0, mark_answers: float = 0.0) -> dict[str, Any]:
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    examples = list(read_examples(data / "train.jsonl"))
    if max_examples is not None:
        examples = examples[:max_examples]
    encoded = [encode_example(lm, ex) for ex in examples]
    decisions = decision_tokens(lm)
    nl = lm.line_end
    w = lm.window
    n_windows = sum(math.ceil(len(e.prefixes) / w) for e in encoded)
    log(f"{len(encoded)} functions, {sum(len(e.prefixes) for e in encoded)} lines, {n_windows} windows of {w} lines")
    ids_to = id_tokens(lm, 2 * max((len(e.prefixes) for e in encoded), default=0)) if shift_ids > 0 else []
    if shift_ids > 0 and not ids_to:
        log("--shift-ids: the tokenizer does not write a dense id as one word; ids are not shifted")

    def replacements(j: int, s: int, t: int) -> dict[int, Replaced]:
        got = marked(lm, examples[j], s, t, rng, mark_answers, decisions,
                     emptied(lm, examples[j], s, t, rng, empty_rate, decisions))
        if ids_to and rng.random() < shift_ids:
            got = shifted(encoded[j], s, t, ids_to, rng, got)
        return got
    opt = torch.optim.AdamW([p for p in lm.model.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    model = lm.model.train()
    t0 = time.monotonic()
    budget = minutes * 60
    step = tokens = seen = right = 0
    done = False
    epoch = 0
    history: list[dict[str, float]] = []
    last_log = t0
    while not done and (epochs is None or epoch < epochs):
        jobs: list[tuple[int, int, int]] = []  # (example, first line, stop)
        for j, e in enumerate(encoded):
            shift = rng.randrange(w) if epoch else 0
            bounds = ([0] if shift else []) + list(range(shift, len(e.prefixes), w)) + [len(e.prefixes)]
            jobs.extend((j, a, c) for a, c in zip(bounds, bounds[1:]) if c > a)
        rng.shuffle(jobs)
        for b in range(0, len(jobs), batch):
            elapsed = time.monotonic() - t0
            if elapsed > budget:
                done = True
                break
            frac = min(1.0, (epoch + b / len(jobs)) / epochs if epochs is not None else elapsed / max(budget, 1e-9))
            for g in opt.param_groups:
                g["lr"] = lr * max(0.05, 1.0 - frac) * min(1.0, (step + 1) / 50)
            seqs = [window_ids(encoded[j], s, t, nl, replacements(j, s, t)) for j, s, t in jobs[b: b + batch]]
            width = max(len(x) for x, _, _, _ in seqs)
            ids = torch.zeros((len(seqs), width), dtype=torch.long)
            labels = torch.full((len(seqs), width), IGNORE, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            bad = [(r, c, t) for r, (_, _, z, _) in enumerate(seqs) for c, t in z] if unlikelihood else None
            unanswered = [(r, c, t) for r, (_, _, _, u) in enumerate(seqs) for c, t in u] if listed_loss else None
            for r, (x, y, _, _) in enumerate(seqs):
                ids[r, : len(x)] = torch.tensor(x)
                labels[r, : len(y)] = torch.tensor(y)
                mask[r, : len(x)] = 1
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss, n, c = answer_loss(lm, ids, labels, mask, bad, unanswered)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            tokens += int(mask.sum())
            seen += n
            right += c
            if time.monotonic() - last_log >= 60:  # a line a minute
                last_log = time.monotonic()
                el = time.monotonic() - t0
                acc = right / max(seen, 1)
                history.append({"step": step, "seconds": round(el, 1), "loss": round(float(loss.detach()), 4), "accuracy": round(acc, 4)})
                log(f"epoch {epoch} step {step} loss {float(loss.detach()):.3f} answer accuracy {acc:.3f} "
                    f"{tokens / el:.0f} tokens/s {el / 60:.1f} min")
                seen = right = 0
        if not done:
            epoch += 1
    if epochs is not None and epoch < epochs:
        log(f"--minutes ended the run after {epoch} of {epochs} epochs")
    model.eval()
    # A fine-tune keeps how its base was trained (`base`: its command, steps, minutes and own base).
    base = {k: lm.meta[k] for k in ("command", "steps", "epochs", "minutes", "base") if k in lm.meta}
    meta = {"command": command, "seed": seed, "format": FORMAT, "window": w, "empty_rate": empty_rate,
            "unlikelihood": unlikelihood, "listed_loss": listed_loss, "shift_ids": shift_ids,
            "mark_answers": mark_answers,
            "feedback_in_context": any(ex.get("feedback") for ex in examples), "steps": step, "epochs": epoch,
            "schedule": "epochs" if epochs is not None else "minutes", "tokens": tokens,
            "minutes": round((time.monotonic() - t0) / 60, 2), "history": history[-20:],
            "parameters": sum(p.numel() for p in model.parameters())}
    if "command" in base:
        meta["base"] = base
    save_lm(lm, out, meta)
    log(f"saved {out} after {step} steps, {tokens} tokens, {meta['minutes']} min")
    return meta
