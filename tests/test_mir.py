"""The MIR front end: every corpus file parses, prints back byte for byte, and re-parses to the
same structure; the body language's constructs come out as data."""

from __future__ import annotations

from pathlib import Path

import pytest

from verilocc.mir.parser import parse_module, read_module
from verilocc.mir.printer import print_module

from .conftest import EXAMPLES, FIXTURES, KERNELS


def _structure(m):  # type: ignore[no-untyped-def]
    return [
        (
            f.name,
            f.header,
            sorted((str(k), v.reg_class, v.preferred, v.flags) for k, v in f.registers.items()),
            [
                (b.number, b.name, b.attributes, b.successors, b.liveins,
                 [(i.opcode, i.instr_flags, i.mem, i.trailer, i.bundled,
                   [(o.kind, o.text if o.kind != "reg" else None, o.vreg, o.phys, o.subreg, o.reg_class, o.llt,
                     sorted(o.flags), o.tied_def) for o in i.operands]) for i in b.instructions])
                for b in f.blocks
            ],
        )
        for f in m.functions
    ]


ALL_MIR = (sorted(KERNELS.glob("*/*.mir")) + sorted((FIXTURES / "targets").glob("llvm*/*/*.mir"))
           + sorted((FIXTURES / "llvm").glob("*/*/*.mir")))  # LLVM 15 and 16


@pytest.mark.parametrize("path", ALL_MIR, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}/{p.name}")
def test_round_trip(path: Path) -> None:
    m = read_module(path)
    text = print_module(m)
    assert text == path.read_text(), "printer does not reproduce llc's bytes"
    again = parse_module(text, str(path))
    assert _structure(again) == _structure(m)


SNIPPET = """\
--- |
  define amdgpu_kernel void @k() #0 { ret void }
  attributes #0 = { "target-cpu"="gfx90a" }
...
---
name:            k
registers:
  - { id: 0, class: vreg_64_align2, preferred-register: '', 
      flags: [  ] }
  - { id: 1, class: vgpr_32 }
liveins:
  - { reg: '$vgpr0', virtual-reg: '%1' }
body:             |
  bb.0.entry (%ir-block.0, align 4):
    successors: %bb.1(0x80000000)
    liveins: $vgpr0, $sgpr4_sgpr5:0x000000000000000F ; a comment
  
    %1:vgpr_32(s32) = COPY $vgpr0
    undef %0.sub0:vreg_64_align2 = nofpexcept V_MOV_B32_e32 target-flags(amdgpu-abs32-lo) @g + 4, implicit $exec
    early-clobber %0.sub1:vreg_64_align2 = V_MAC_F32_e32 killed %1, %1, %0.sub1(tied-def 0), implicit $mode, implicit $exec, debug-location !12
    BUNDLE implicit-def $vgpr2, implicit $vgpr0 {
      $vgpr2 = V_MOV_B32_e32 internal $vgpr0, implicit $exec
    }
    GLOBAL_STORE_DWORD %0, %1, 0, 0, implicit $exec :: (store (s32) into %ir.p, addrspace 1), (load (s32) from %stack.0)
    S_BRANCH %bb.1
  
  bb.1:
    SI_RETURN csr_amdgpu, implicit $vgpr0
...
"""


def test_body_language() -> None:
    m = parse_module(SNIPPET, "s.mir")
    fn = m.functions[0]
    assert fn.target_cpu == "gfx90a"
    assert fn.registers[0].reg_class == "vreg_64_align2" and fn.registers[0].flags == ()
    assert fn.liveins == [("vgpr0", "%1")]
    b0 = fn.blocks[0]
    assert (b0.number, b0.name, b0.attributes) == (0, "entry", ("%ir-block.0", "align 4"))
    assert b0.successors == [(1, "0x80000000")]
    assert b0.liveins == [("vgpr0", None), ("sgpr4_sgpr5", 0xF)]
    copy, mov, mac, bundle, inner, store, br = b0.instructions
    assert copy.operands[0].llt == "s32" and copy.operands[0].reg_class == "vgpr_32"
    assert copy.operands[0].vreg == 1 and copy.operands[1].phys == "vgpr0"
    assert mov.instr_flags == ("nofpexcept",)
    assert mov.operands[0].has("undef") and mov.operands[0].subreg == "sub0"
    assert mov.operands[1].kind == "global"
    assert mac.operands[0].has("early-clobber") and mac.operands[3].tied_def == 0
    assert mac.trailer == ("debug-location !12",)
    assert bundle.opens_bundle and inner.bundled and inner.operands[1].has("internal")
    assert store.mem is not None and "%stack.0" in store.mem
    assert br.operands[0].kind == "mbb"
    assert fn.blocks[1].instructions[0].operands[0].kind == "regmask"
    assert print_module(parse_module(print_module(m), "t.mir")) == print_module(m)


def test_printer_keeps_def_of_an_output_among_the_operands() -> None:
    # INLINEASM writes its outputs among its operands (`def %3`); printed without `def`, llc
    # reads them as uses of undefined registers.
    text = (FIXTURES / "allocate" / "nested-loop-conditions.gfx90a.pre.mir").read_text()
    line = ('    INLINEASM &"v_mov_b32 $0, 0", 0 /* attdialect */, 1835018 /* regdef:VGPR_32 */, def %99, '
            '1835017 /* reguse:VGPR_32 */, %98\n')
    head, sep, rest = text.partition("  bb.0")
    assert sep
    first_ins = rest.index("\n    ", rest.index("\n  \n")) + 1
    module = parse_module(head + sep + rest[:first_ins] + line + rest[first_ins:])
    ins = next(i for b in module.functions[0].blocks for i in b.instructions if i.opcode == "INLINEASM")
    assert [op.is_def for op in ins.operands if op.kind == "reg"] == [True, False]
    again = parse_module(print_module(module))
    ins = next(i for b in again.functions[0].blocks for i in b.instructions if i.opcode == "INLINEASM")
    assert [op.is_def for op in ins.operands if op.kind == "reg"] == [True, False]


def test_operand_def_and_implicit_follow_its_flags() -> None:
    # `is_def` and `is_implicit` are read from the flags: every way an operand gets or changes
    # its flags (the parser, an assignment, `replace`, a copy, pickle) leaves them true to them.
    import copy
    import dataclasses
    import pickle

    fn = parse_module(SNIPPET, "s.mir").functions[0]
    ops = [op for b in fn.blocks for ins in b.instructions for op in ins.operands if op.kind == "reg"]
    kinds = {(op.is_def, op.is_implicit) for op in ops}
    assert {(True, False), (False, False), (False, True)} <= kinds
    for op in ops:
        assert op.is_def == bool(op.flags & {"def", "implicit-def"})
        assert op.is_implicit == bool(op.flags & {"implicit", "implicit-def"})
    use = next(op for op in ops if not op.is_def and not op.is_implicit)
    use.flags = use.flags | {"implicit-def"}
    assert use.is_def and use.is_implicit and use.has("implicit-def")
    use.flags = use.flags - {"implicit-def"}
    assert not use.is_def and not use.is_implicit and not use.has("implicit-def")
    made = dataclasses.replace(use, flags=frozenset({"def"}))
    assert made.is_def and not made.is_implicit and not use.is_def
    for again in (copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert again == made and again.is_def and again.flags == frozenset({"def"})
    assert dataclasses.asdict(made)["flags"] == frozenset({"def"})
    assert "is_def" not in repr(made) and made == dataclasses.replace(made)


@pytest.mark.parametrize("cls", ["Operand", "Instruction"])
def test_written_out_init_and_reduce_cover_every_field(cls: str) -> None:
    # `Operand` and `Instruction` write their `__init__` and `__reduce__` out (for the compiled
    # core): each field, set to a value of its own, must survive `replace`, a deep copy and pickle.
    import copy
    import dataclasses
    import pickle

    from verilocc.mir import model

    kind = getattr(model, cls)
    inner = model.Operand("imm", "0", 1, 1)
    values = {"kind": "reg", "text": "%7.sub0", "line": 3, "column": 5, "vreg": 7, "phys": "vgpr1", "subreg": "sub0",
              "reg_class": "vreg_64", "llt": "s32", "flags": frozenset({"def", "dead"}), "tied_def": 2, "tie_implied": True,
              "opcode": "V_MOV_B32_e32", "operands": [inner], "instr_flags": ("nofpexcept",), "mem": "(load 4)",
              "trailer": ("debug-location !5",), "bundled": True, "opens_bundle": True}
    names = [f.name for f in dataclasses.fields(kind)]
    made = kind(**{n: values[n] for n in names})
    assert [getattr(made, n) for n in names] == [values[n] for n in names]
    for again in (dataclasses.replace(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert type(again) is kind and [getattr(again, n) for n in names] == [values[n] for n in names]


def test_built_instructions_equal_their_printed_text_parsed() -> None:
    # Every instruction of the examples, built again from its parts (`verilocc.mir.build`, as a
    # pass that inserts code builds one), equals what the parser reads from its printed text:
    # each operand's line, column, text and flags, and the ties the opcode's definition implies.
    from verilocc.mir.body import parse_instruction
    from verilocc.mir.build import instruction, reg
    from verilocc.mir.model import Operand
    from verilocc.mir.printer import print_instruction

    built = 0
    for path in sorted(EXAMPLES.glob("*/*.mir")):
        for b in read_module(path).functions[0].blocks:
            for ins in b.instructions:
                if ins.instr_flags or ins.trailer or ins.bundled or ins.opens_bundle or any(op.llt for op in ins.operands):
                    continue
                ops = [reg(op.vreg, phys=op.phys, subreg=op.subreg, reg_class=op.reg_class, flags=op.flags,
                           tied_def=None if op.tie_implied else op.tied_def) if op.kind == "reg"
                       else Operand(op.kind, op.text, 0, 0) for op in ins.operands]
                made = instruction(ins.opcode, ops, ins.line, ins.mem)
                assert made == parse_instruction(print_instruction(ins), path.name, ins.line), print_instruction(ins)
                built += 1
    assert built > 1000
    # A use that the definition ties (`$vdst = $vdst_in`), written without `(tied-def 0)`.
    text = "%1:vgpr_32 = SI_SPILL_S32_TO_VGPR %2, 3, %1"
    made = instruction("SI_SPILL_S32_TO_VGPR", [reg(1, reg_class="vgpr_32", flags={"def"}), reg(2),
                                                Operand("imm", "3", 0, 0), reg(1)], 7)
    assert made.operands[3].tied_def == 0 and made.operands[3].tie_implied and print_instruction(made) == text
    assert made == parse_instruction(text, "t.mir", 7)
