"""Run an allocation strategy over a module: one strategy call per function, one allocated
module when every function got a VERIFIED allocation.

A *strategy* is any callable ``(function, target) -> SolverAllocation`` that returns a result
checked by the verifier (`verilocc.allocators.optimal.solve_function` is one; a language-model
strategy is another). `verilocc allocate` picks the strategy from its options and calls
`allocate_module`; the strategies live in `verilocc/allocators/`, the CLI only dispatches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from verilocc.rewrite.assignment import format_assignment
from verilocc.allocators.optimal import SolverAllocation
from verilocc.mir.model import Function, Module
from verilocc.target import Target
from verilocc.target.waves import function_launch

Strategy = Callable[[Function, Target], SolverAllocation]


@dataclass
class ModuleAllocation:
    pre: Module
    results: dict[str, SolverAllocation]  # function name -> result, in module order
    targets: dict[str, Target]

    @property
    def ok(self) -> bool:
        return all(r.status in ("optimal", "feasible") and r.function is not None for r in self.results.values())

    def post(self) -> Module:
        """The allocated module (only when `ok`)."""
        assert self.ok
        functions = [self.results[fn.name].function for fn in self.pre.functions]
        return Module(self.pre.file, self.pre.ir_text, [f for f in functions if f is not None], self.pre.ir_blank_lines)

    def assignment_text(self) -> str:
        """The assignments (`%N -> $reg`), one section per function when there are several; a
        function with spill code says that its assignment is one of the program with spill
        code (its reload registers have numbers the input file does not have)."""
        parts: list[str] = []
        for name, r in self.results.items():
            head = f"# {name}\n" if len(self.results) > 1 else ""
            if r.spilled is not None:
                head += f"# with spill code: {r.spilled.describe()}; registers of that program\n"
            parts.append(head + format_assignment(r.assignment))
        return "".join(parts)

    def summary(self, name: str) -> str:
        """One line: status, registers, occupancy (as llc counts it, with what of the launch
        holds it there: LDS, work-group size, amdgpu-waves-per-eu), spill code, time, whether
        optimality was proved, and an occupancy below what the register pressure allows."""
        r = self.results[name]
        u = r.usage
        regs = (f"VGPR {u['vgpr']} AGPR {u['agpr']} SGPR {u['sgpr']}, {u['waves']} waves/SIMD on "
                f"{self.targets[name].name}" if u else "no allocation")
        ok = r.status in ("optimal", "feasible")
        proof = {"optimal": "proved optimal", "feasible": "not proved optimal"}.get(r.status, r.reason)
        if ok and r.spilled is not None:
            proof = r.reason
        elif ok and r.reason and r.status == "feasible":
            proof = r.reason
        kept = f", kept {r.kept} preference(s)" if r.kept else ""
        spill = f", {r.spilled.describe()}" if ok and r.spilled is not None else ""
        below = ""
        fn = next((f for f in self.pre.functions if f.name == name), None)
        launch = function_launch(fn, self.targets[name]) if fn is not None and u else None
        if launch is not None and u["waves"] == launch.waves < self.targets[name].max_waves_per_simd:
            regs += f" (at most {launch.waves} by {'; '.join(launch.limits(launch.waves))})"
        if ok and u and r.waves_bound and u["waves"] < r.waves_bound:
            below = (f"; fewer waves than the {r.waves_bound} the register pressure allows "
                     "(LLVM's greedy allocator may reach more)")
        return f"{r.status.upper()} {name}: {regs}{spill}, {r.seconds:.2f} s{kept}; {proof}{below}"


def allocate_module(pre: Module, strategy: Strategy, mcpu: str | None = None) -> ModuleAllocation:
    from verilocc.errors import InputError
    from verilocc.verify import function_target, spill_code_in_virtual_program

    results: dict[str, SolverAllocation] = {}
    targets: dict[str, Target] = {}
    for fn in pre.functions:
        spilled = spill_code_in_virtual_program(fn)
        if spilled is not None:  # a program some allocation already ran on: not an input
            raise InputError(f"function '{fn.name}': {spilled.message.split(': ', 1)[1]}", pre.file,
                             spilled.place.line, spilled.place.column)
    for fn in pre.functions:
        targets[fn.name] = function_target(fn, mcpu, pre.file)
        results[fn.name] = strategy(fn, targets[fn.name])
    return ModuleAllocation(pre, results, targets)
