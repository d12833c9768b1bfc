"""What a view shows: per function of an allocation, its occupancy, resources and findings.

An `AllocationView` is one allocation with its verification report; a `View` shows one, or two
(`--compare`: a second allocation of the same kernel beside the first). The renderers
(`verilocc.view.page` for HTML, `verilocc.view.figure` for PNG) read only these objects, and
the findings they show are the report's own `Finding`s, as the text, JSON and SARIF
renderings of `verilocc.report` read them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from verilocc.errors import InputError
from verilocc.findings import FunctionResult, Report, Verdict
from verilocc.mir.model import Function, Module
from verilocc.target import Target
from verilocc.verify import as_read, function_target, prepare_pair
from verilocc.view.marks import Mark, place_findings
from verilocc.view.occupancy import Occupancy, build_occupancy
from verilocc.view.resources import Resources, resources


@dataclass(frozen=True)
class FunctionView:
    name: str
    file: str
    target: Target
    occupancy: Occupancy
    resources: Resources
    marks: list[Mark]
    result: FunctionResult | None  # the verification result (verdict, layers, notes)

    @property
    def verdict(self) -> Verdict | None:
        return self.result.verdict if self.result is not None else None


@dataclass(frozen=True)
class AllocationView:
    file: str
    pre_file: str | None
    report: Report
    functions: list[FunctionView]


@dataclass(frozen=True)
class View:
    sides: list[AllocationView]  # one, or two with --compare
    title: str

    def function_names(self) -> list[str]:
        names: list[str] = []
        for side in self.sides:
            names.extend(f.name for f in side.functions if f.name not in names)
        return names


def only_function(module: Module, name: str | None) -> Module:
    """`module` with just the function `name` (all of them when None); bad names exit 2."""
    if name is None:
        return module
    for fn in module.functions:
        if fn.name == name:
            return dataclasses.replace(module, functions=[fn])
    known = ", ".join(f.name for f in module.functions) or "none"
    raise InputError(f"no function '{name}' in this file (functions: {known})", module.file, 0, 0)


def function_view(fn: Function, pre: Function | None, result: FunctionResult | None, mcpu: str | None) -> FunctionView:
    target = function_target(fn, mcpu, fn.file)
    pair = prepare_pair(as_read(fn, target), as_read(pre, target), target) if pre is not None else None
    occ = build_occupancy(fn, pair)
    to_post = {v: q for q, v in pair.block_pairing.items()} if pair is not None else None
    marks = place_findings(result.findings, fn, occ, to_post) if result is not None else []
    return FunctionView(fn.name, fn.file, target, occ, resources(fn, target, occ), marks, result)


def build_side(post: Module, pre: Module | None, report: Report, mcpu: str | None) -> AllocationView:
    results = {fr.name: fr for fr in report.functions}
    pre_functions = {f.name: f for f in pre.functions} if pre is not None else {}
    functions = [function_view(fn, pre_functions.get(fn.name), results.get(fn.name), mcpu) for fn in post.functions]
    return AllocationView(post.file, pre.file if pre is not None else None, report, functions)
