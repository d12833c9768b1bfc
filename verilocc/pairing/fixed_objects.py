"""Fixed stack objects of the two programs, paired by the memory they name.

A fixed stack object (`%fixed-stack.N`: an incoming stack argument, a byval argument, the
outgoing argument area of a tail call) sits at a fixed offset from the stack pointer on
entry. Its id is only its place in the function's `fixedStack:` list, and llc does not keep
that place when it reads a MIR file back: the parser creates the objects in the order the
file lists them and the printer lists them from the last created, so a re-read file names
the object at offset 28 `%fixed-stack.7` where the file it read named it `%fixed-stack.32`.

Two objects are the same memory when they agree on offset and size (and on what else the
header says of the memory: type, stack id, whether it is immutable or aliased). The
references of both programs are renamed to the lowest virtual-program id of the same
memory (a function can list one memory twice: a byval argument and a tail call's outgoing
argument at one offset are the same bytes). An object of the allocated program with no
counterpart gets a name no virtual-program operand has, so that any instruction that uses it
stays unpaired (register allocation creates no fixed object). Objects that overlap without
being the same bytes keep their own names: equivalence threads one memory token through
every access, so no access is taken to be independent of another.

A load of an incoming stack argument (an immutable fixed object) in the allocated program
therefore pairs with the virtual program's load of the same bytes, whatever either file
calls the object. LLVM does not rematerialise such a load on AMDGPU (no memory pseudo is
`isReMaterializable`), so a copy of one that the virtual program does not have is an added
instruction, whichever object it reads.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from verilocc.mir.model import Function, Instruction, Operand

_REFERENCE = re.compile(r"%fixed-stack\.(\d+)(?!\d)")

# What of a `fixedStack:` entry describes the memory itself. Alignment is left out: the
# parser of some llc versions recomputes it from the offset, and it changes no byte.
_MEMORY_FIELDS = ("type", "offset", "size", "stack-id", "isImmutable", "isAliased")


def _description(entry: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(entry.get(field, "")) for field in _MEMORY_FIELDS)


def _objects(fn: Function) -> dict[int, tuple[str, ...]]:
    objects: dict[int, tuple[str, ...]] = {}
    for entry in fn.header.get("fixedStack") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int):
            objects[entry["id"]] = _description(entry)
    return objects


def fixed_object_names(pre: Function, post: Function) -> tuple[dict[int, int], dict[int, int | None]]:
    """The id each fixed object is read under, for the virtual and the allocated program: the
    lowest virtual-program id of an object that is the same memory (None: no object of the
    virtual program is that memory)."""
    pre_objects, post_objects = _objects(pre), _objects(post)
    first: dict[tuple[str, ...], int] = {}
    for i in sorted(pre_objects):
        first.setdefault(pre_objects[i], i)
    return ({i: first[d] for i, d in pre_objects.items()},
            {i: first.get(d) for i, d in post_objects.items()})


def _unpaired_name(post_id: int) -> str:
    """The name an allocated-program fixed object with no counterpart is read under."""
    return f"%fixed-stack.allocated-{post_id}"


def _renamed_text(text: str, names: dict[int, int] | dict[int, int | None]) -> str:
    def name(m: re.Match[str]) -> str:
        old = int(m.group(1))
        if old not in names:
            return m.group(0)  # not described by the header: read as written
        new = names[old]
        return _unpaired_name(old) if new is None else f"%fixed-stack.{new}"
    return _REFERENCE.sub(name, text)


def _renamed_instruction(ins: Instruction, names: dict[int, int] | dict[int, int | None]) -> Instruction:
    if not (any(op.kind == "fixed-stack" for op in ins.operands) or (ins.mem and "%fixed-stack." in ins.mem)):
        return ins
    operands: list[Operand] = [dataclasses.replace(op, text=_renamed_text(op.text, names))
                               if op.kind == "fixed-stack" else op for op in ins.operands]
    mem = _renamed_text(ins.mem, names) if ins.mem else ins.mem
    return dataclasses.replace(ins, operands=operands, mem=mem)


def _renamed(fn: Function, names: dict[int, int] | dict[int, int | None]) -> Function:
    if all(k == v for k, v in names.items()):
        return fn
    blocks = [dataclasses.replace(b, instructions=[_renamed_instruction(i, names) for i in b.instructions])
              for b in fn.blocks]
    return dataclasses.replace(fn, blocks=blocks)


def with_fixed_objects_named(pre: Function, post: Function) -> tuple[Function, Function]:
    """`pre` and `post` with each fixed stack object called by one name for each memory
    (`fixed_object_names`; the inputs are not changed, and come back as they are when every
    id already agrees)."""
    pre_names, post_names = fixed_object_names(pre, post)
    return _renamed(pre, pre_names), _renamed(post, post_names)
