"""A word-level tokenizer for normalised prompts, built by hand (no downloads).

Every listed-choice kind (`fv`, `=s`, `-`), decision (`@0`..`@15`), register of the per-file
alphabet (`v12`, `s4`, `a0`, `vcc`: the feedback paragraph names them), neutral class, dense id
(`%0`..`%4095`), number (0..511) and keyword is one token; any other word is spelt
in characters, so the feedback paragraph of a counterexample is still readable. Words are
separated by spaces; the newline is a token of its own.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

from verilocc.llm.choices import FILE_LETTER, KINDS, NO_CHOICE
from verilocc.llm.normalise import MAX_NUMBER
from verilocc.target.registers import special_register_names

SPECIAL = ["<pad>", "<bos>", "<eos>", "<unk>", "\n", " "]
KEYWORDS = ["target", "align1", "align2", "agprs", "noagprs", "wave32", "wave64", "vgprs", "sgprs",
            "feedback:", "=", "f", "!", ":", "error", "?"]
MAX_IDS = 4096
MAX_DECISIONS = 16
_CHAR = "\x01"  # prefix of the character tokens that spell other words


def _vocabulary() -> list[str]:
    words: list[str] = list(SPECIAL) + KEYWORDS + [NO_CHOICE]
    words += [k + f for k in KINDS for f in (*FILE_LETTER.values(), "x")]
    words += [f"@{j}" for j in range(MAX_DECISIONS)]
    for files in ("s", "v", "a", "av", "as", "asv", "sv", "x"):
        words += [f"{files}h"] + [f"{files}{w}" for w in range(1, 33)]
    for letter, count in (("s", 106), ("v", 256), ("a", 256)):
        for i in range(count):
            words += [f"{letter}{i}", f"{letter}{i}.h", f"{letter}{i}.l"]
    words += [n for n in special_register_names() if not n.startswith("ttmp")]
    words += [str(n) for n in range(MAX_NUMBER + 1)]
    words += [f"%{i}" for i in range(MAX_IDS)]
    words += [_CHAR + c for c in string.printable if c not in " \n\t\r\x0b\x0c"]
    return list(dict.fromkeys(words))


class Tokenizer:
    def __init__(self, words: list[str] | None = None) -> None:
        self.words = words if words is not None else _vocabulary()
        self.index = {w: i for i, w in enumerate(self.words)}
        self.pad, self.bos, self.eos, self.unk = (self.index[w] for w in SPECIAL[:4])
        self.newline, self.space = self.index["\n"], self.index[" "]

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for n, line in enumerate(text.split("\n")):
            if n:
                ids.append(self.newline)
            for k, word in enumerate(line.split()):
                got = self.index.get(word)
                if got is not None:
                    ids.append(got)
                else:
                    ids.extend(self.index.get(_CHAR + c, self.unk) for c in word)
                    ids.append(self.space)  # ends the spelt word
        return ids

    def decode(self, ids: list[int]) -> str:
        out: list[str] = []
        spelling = False
        for i in ids:
            w = self.words[i] if 0 <= i < len(self.words) else "<unk>"
            if w == "\n":
                out.append("\n")
                spelling = False
            elif w == " ":
                spelling = False
            elif w.startswith(_CHAR):
                if not spelling and out and not out[-1].endswith("\n"):
                    out.append(" ")
                out.append(w[1:])
                spelling = True
            else:
                if out and not out[-1].endswith("\n"):
                    out.append(" ")
                out.append(w)
                spelling = False
        return "".join(out)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps({"kind": "verilocc-words", "words": self.words}), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Tokenizer:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return cls(list(doc["words"]))
