"""The model commands `verilocc dataset build`, `verilocc train` and `verilocc eval`
(`verilocc allocate`, whose default strategy is the model loop, is `verilocc.allocate_command`).

Torch and transformers are imported inside the commands that need them, so `verilocc verify`
never loads them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from verilocc.errors import InputError
from verilocc.llm import HELD_OUT_SOURCES
from verilocc.output import log_console

if TYPE_CHECKING:
    from verilocc.llm.evaluate import Case

#: Kernel sources and llc pairs of the larger corpus, beside a checkout (relative to the working directory).
SHARED = Path("..") / "shared"


def _command_line() -> str:
    return "verilocc " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def cmd_dataset_build(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from verilocc.llm.build import DEFAULT_TARGETS, compile_ir, make_pairs, read_manifest, source_path
    from verilocc.llm.dataset import build_examples, find_pairs

    console = log_console()
    if args.solver_timeout <= 0:
        raise InputError("--solver-timeout must be positive", "--solver-timeout", 0, 0)
    out = Path(args.out)
    targets = tuple(t.strip() for t in args.targets.split(",") if t.strip()) if args.targets else DEFAULT_TARGETS
    kernels = Path(args.kernels)
    sources: dict[str, str] = {}
    held = tuple(s.strip() for s in args.held_out.split(",") if s.strip())
    manifests = [kernels / name for name in (("manifest.txt", "manifest_xl.txt") if args.xl else ("manifest.txt",))]
    own = len(manifests)  # the kernels' own manifests; then --manifest
    manifests += map(Path, args.manifest or [])
    for man in manifests:
        if not man.is_file():
            raise InputError("no kernel manifest here", str(man), 0, 0)
    read = [read_manifest(man) for man in manifests]
    for man, manifest in list(zip(manifests, read))[own:]:  # more variants: of trained sources only
        for kv in manifest:
            if kv.source in held:
                raise InputError(f"'{kv.name}' is a variant of {kv.source}, which is held out of training "
                                 "(--held-out)", str(man), kv.line, kv.column)
    for man, manifest in zip(manifests, read):
        for kv in manifest:
            if not args.no_compile and not source_path(kernels, kv).is_file():
                raise InputError(f"no such kernel source (looked in {kernels} and {kv.directory})", str(man),
                                 kv.line, kv.column)
    for manifest in read:
        for kv in manifest:
            sources.setdefault(kv.name, kv.source)
        if not args.no_compile:
            sources.update(compile_ir(kernels, manifest, targets, out / "ir", args.clang, console.print))
    pairs = []
    if not args.no_compile:
        for llc in args.llc.split(","):
            make_pairs(out / "ir", targets, llc, out / f"pairs-{llc}", console.print, jobs=args.jobs)
            pairs += [p for p in find_pairs(out / f"pairs-{llc}", llc) if p.target in targets]
    for extra in args.pairs or []:
        pairs += find_pairs(Path(extra), Path(extra).name)
    with Progress(TextColumn("examples"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[what]}"), console=console) as bar:
        task = bar.add_task("examples", total=len(pairs), what="")

        def step(msg: str) -> None:
            if msg.startswith("skip"):
                console.print(msg)
            bar.update(task, advance=1, what=msg)

        counts = build_examples(pairs, sources, out, held, step, jobs=args.jobs, feedback=not args.no_feedback,
                                teacher=args.teacher, solver_timeout=args.solver_timeout)
    taught = f", {counts['solver_taught']} taught by the solver" if args.teacher == "solver" else ""
    console.print(f"{counts['train']} training functions ({counts['train_lines']} lines, {counts['feedback']} feedback "
                  f"examples{taught}), {counts['heldout']} held out "
                  f"(sources {', '.join(held)}), {counts['failed']} skipped -> {out}/train.jsonl, heldout.jsonl, manifest.tsv")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from verilocc.llm.lm import load_lm, new_own_model
    from verilocc.llm.train import train

    data = Path(args.data)
    if not (data / "train.jsonl").exists():
        raise InputError("no train.jsonl here: run `verilocc dataset build` first", str(data), 0, 0)
    if (args.epochs is not None and args.epochs < 1) or args.minutes <= 0:
        what = "--minutes" if args.minutes <= 0 else "--epochs"
        raise InputError(f"{what} must be positive", what, 0, 0)
    for what, rate in (("--empty-rate", args.empty_rate), ("--shift-ids", args.shift_ids),
                       ("--mark-answers", args.mark_answers)):
        if not 0 <= rate <= 1:
            raise InputError(f"{what} must be a share from 0 to 1", what, 0, 0)
    if args.mark_answers and not args.listed_loss:
        raise InputError("--mark-answers needs --listed-loss (a marked line's loss is that of its other listed choices)",
                         "--mark-answers", 0, 0)
    if args.base:
        lm = load_lm(args.base)
        if args.lora:
            from peft import LoraConfig, get_peft_model

            lm.model = get_peft_model(lm.model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, task_type="CAUSAL_LM"))
    else:
        lm = new_own_model(args.size, args.seed)
    console = log_console()
    train(lm, data, Path(args.out), minutes=args.minutes, epochs=args.epochs, batch=args.batch, lr=args.lr,
          seed=args.seed, threads=args.threads, bf16=args.bf16, log=console.print, command=_command_line(),
          max_examples=args.max_examples, empty_rate=args.empty_rate, unlikelihood=args.unlikelihood,
          listed_loss=args.listed_loss, shift_ids=args.shift_ids, mark_answers=args.mark_answers)
    return 0


def eval_cases(args: argparse.Namespace) -> list[Case]:
    """The held-out functions `verilocc eval` runs on, from its arguments (also those of an
    earlier run, read back from its eval.json: bench/model_eval/single_shot_failures.py)."""
    from verilocc.llm.build import read_manifest
    from verilocc.llm.evaluate import kernel_cases, llvm_test_cases

    sources: dict[str, str] = {}
    for manifest in [Path(args.kernels) / "manifest.txt", *map(Path, args.manifest or [])]:
        if not manifest.is_file():
            raise InputError("no kernel manifest here (kernel -> source)", str(manifest), 0, 0)
        sources.update((kv.name, kv.source) for kv in read_manifest(manifest))
    held = tuple(s.strip() for s in args.held_out.split(",") if s.strip())
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    kernels = [k.strip() for k in args.kernel.split(",")] if args.kernel else None
    cases = kernel_cases([Path(p) for p in args.pairs or [str(SHARED / "corpus")]], targets, sources, held, kernels)
    if args.llvm_tests and args.llvm_test_functions:
        if not Path(args.llvm_tests).is_dir():
            raise InputError("no such directory (make it with scripts/llvm_tests_corpus.py)", args.llvm_tests, 0, 0)
        cases += llvm_test_cases(Path(args.llvm_tests), targets, args.llvm_test_functions)
    if not cases:
        raise InputError("no held-out function for these targets", ",".join(args.pairs or [str(SHARED / "corpus")]), 0, 0)
    return cases


def cmd_eval(args: argparse.Namespace) -> int:
    import torch

    from verilocc.llm.evaluate import run_eval
    from verilocc.llm.lm import load_lm_or_default

    torch.set_num_threads(args.threads)
    if args.jobs < 1:
        raise InputError("-j must be at least 1", "-j", 0, 0)
    for name in ("samples", "rounds", "llvm_test_functions", "large_samples", "solver_timeout"):
        if getattr(args, name) < 0:
            raise InputError(f"--{name.replace('_', '-')} must not be negative", f"--{name}", 0, 0)
    cases = eval_cases(args)
    lm = load_lm_or_default(args.model)
    run_eval(cases, lm, samples=args.samples, rounds=args.rounds, temperature=args.temperature, seed=args.seed,
             timeout=args.timeout, out=Path(args.out), console=log_console(), command=_command_line(), large=args.large,
             large_samples=args.large_samples, jobs=args.jobs, rounds_temperature=args.rounds_temperature,
             steer=args.steer, resume=args.resume, solver_timeout=args.solver_timeout)
    return 0


def add_dataset_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    d = sub.add_parser("dataset", help="build training data for the allocation model")
    dsub = d.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    b = dsub.add_parser("build", help="compile kernels into pre/post MIR pairs and training examples",
                        description="Compile the HIP kernels of a manifest with clang for every target, make pre/post "
                        "register-allocation pairs with each llc, and turn them into normalised training examples, "
                        "split into train and held-out by kernel source. Resumes: existing outputs are kept.")
    b.add_argument("--kernels", default=str(SHARED / "kernels"), metavar="DIR",
                   help="HIP sources and manifest.txt (default ../shared/kernels)")
    b.add_argument("--out", default="build/dataset", metavar="DIR", help="output directory (default build/dataset)")
    b.add_argument("--targets", default=None, metavar="GFX[,GFX]", help="default gfx908,gfx90a,gfx942,gfx1100,gfx1200")
    b.add_argument("--clang", default="clang-19")
    b.add_argument("--llc", default="llc-19,llc-22", metavar="LLC[,LLC]")
    b.add_argument("--pairs", action="append", metavar="DIR", help="also use existing pairs <DIR>/<target>/*.{pre,post}.mir")
    b.add_argument("--held-out", default=",".join(HELD_OUT_SOURCES), metavar="SRC[,SRC]",
                   help="kernel sources kept out of training (default %(default)s)")
    b.add_argument("--no-feedback", action="store_true",
                   help="no feedback examples (no verification during the build, unless --teacher solver)")
    b.add_argument("--xl", action="store_true", help="also the extra-large variants of manifest_xl.txt")
    b.add_argument("--manifest", action="append", metavar="FILE",
                   help="more kernel variants, in manifest.txt's format (repeatable; e.g. "
                        "bench/model_eval/train_manifest.txt): of the sources in --kernels, or of sources named by a "
                        "path relative to the manifest (--kernels stays on the include path); a held-out source is "
                        "refused")
    b.add_argument("--no-compile", action="store_true", help="only turn --pairs into examples")
    b.add_argument("--teacher", choices=("llvm", "solver"), default="llvm",
                   help="whose allocation the training functions are taught: LLVM's (default), or the SMT allocator's "
                   "VERIFIED one where it ranks first: more waves, no spill code, fewer VGPR+AGPR, SGPRs or copies "
                   "(docs/allocate.md#training-data)")
    b.add_argument("--solver-timeout", type=float, default=20.0, metavar="S",
                   help="seconds the solver may take per function with --teacher solver (default 20)")
    b.add_argument("-j", "--jobs", type=int, default=1, help="pairs compiled and examples built in parallel (default 1)")
    b.set_defaults(func=cmd_dataset_build)


def add_train_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser("train", help="train the allocation model (from scratch, or fine-tune a local HF model)",
                       description="Train a causal LM on the normalised examples of `verilocc dataset build`: the "
                       "project's small Llama-style model from scratch (default), or any Hugging Face causal LM from a "
                       "local path (--base), optionally with LoRA. Nothing is downloaded.")
    t.add_argument("--data", default="build/dataset", metavar="DIR")
    t.add_argument("-o", "--out", default="build/model", metavar="DIR",
                   help="model directory to write (default build/model)")
    t.add_argument("--base", metavar="PATH", help="fine-tune this local model (directory or .gguf file)")
    t.add_argument("--lora", action="store_true", help="train LoRA adapters (peft) instead of all weights")
    t.add_argument("--size", choices=("tiny", "small", "base"), default="small", help="from-scratch model size")
    t.add_argument("--minutes", type=float, default=25.0,
                   help="wall-clock budget (default 25); without --epochs the learning rate decays over it")
    t.add_argument("--epochs", type=int, default=None,
                   help="train this many epochs, the learning rate decaying over them: the same run on any machine "
                   "(--minutes then only stops it early)")
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--empty-rate", type=float, default=0.0, metavar="R",
                   help="empty the listed choices after the answer from a random slot on, in this share of the "
                        "answered lines (default 0)")
    t.add_argument("--unlikelihood", action="store_true",
                   help="also push down the probability of empty and banned slots at every answer")
    t.add_argument("--listed-loss", action="store_true",
                   help="on a line whose answer is `?` (LLVM's register is not listed), raise the probability "
                        "of the listed choices together; without it the model's output there is never trained")
    t.add_argument("--shift-ids", type=float, default=0.0, metavar="R",
                   help="in this share of the training windows, shift every line's dense id %%k by one random "
                        "offset, so that no id's own embedding decides an answer (default 0)")
    t.add_argument("--mark-answers", type=float, default=0.0, metavar="R",
                   help="in this share of the answered lines, mark the answer's own slot `!` (banned, as a "
                        "counterexample marks it) and train the other listed choices there; needs --listed-loss "
                        "(default 0)")
    t.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the machine is shared)")
    t.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=False,
                   help="bf16 autocast (default off: measured 4x slower than float32 on this CPU without bf16 instructions)")
    t.add_argument("--max-examples", type=int, default=None, help=argparse.SUPPRESS)
    t.set_defaults(func=cmd_train)


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    e = sub.add_parser("eval", help="evaluate the model loop on held-out functions against LLVM greedy",
                       description="On held-out functions (GEMM and attention kernels whose sources were never trained "
                       "on, functions of LLVM's AMDGPU tests), per target and family: the unconstrained single-shot "
                       "VERIFIED rate, pass@1/10/100 from --samples sampled proposals (unbiased estimator), rounds to "
                       "VERIFIED with and without counterexample feedback, the constrained first answer, registers and "
                       "waves against LLVM's greedy allocator, seconds per proposal. Prints tables and writes eval.json "
                       "and eval.png.")
    e.add_argument("--pairs", action="append", metavar="DIR",
                   help="kernel pairs <DIR>/<target>/*.{pre,post}.mir (repeatable; default ../shared/corpus)")
    e.add_argument("--kernels", default=str(SHARED / "kernels"), metavar="DIR",
                   help="for manifest.txt (kernel -> source; default ../shared/kernels)")
    e.add_argument("--manifest", action="append", metavar="FILE",
                   help="more kernel variants (kernel -> source) of --pairs, e.g. bench/model_eval/heldout_manifest.txt "
                   "(repeatable)")
    e.add_argument("--held-out", default=",".join(HELD_OUT_SOURCES), metavar="SRC[,SRC]",
                   help="kernel sources held out of training (default %(default)s)")
    e.add_argument("--llvm-tests", metavar="DIR", help="pairs of LLVM's AMDGPU tests (scripts/llvm_tests_corpus.py --out DIR)")
    e.add_argument("--llvm-test-functions", type=int, default=20, metavar="N",
                   help="functions of LLVM's tests per target (default 20)")
    e.add_argument("--targets", default="gfx90a,gfx942,gfx1100", metavar="GFX[,GFX]")
    e.add_argument("--kernel", default=None, metavar="NAME[,NAME]", help="only these kernels")
    e.add_argument("--model", metavar="PATH")
    e.add_argument("--samples", type=int, default=100, metavar="N", help="sampled proposals per function for pass@k (default 100)")
    e.add_argument("--large", type=int, default=300, metavar="VREGS",
                   help="functions with more virtual registers draw --large-samples instead (default 300)")
    e.add_argument("--large-samples", type=int, default=20, metavar="N", help="(default 20)")
    e.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (default 0.7)")
    e.add_argument("--rounds", type=int, default=3, metavar="R", help="rounds of the feedback ablation (default 3): the loop as "
                   "`allocate` runs it, the same with every line drawn again, the feedback paragraph alone, none")
    e.add_argument("--rounds-temperature", type=float, default=1.5, metavar="T",
                   help="sampling temperature of the ablation's proposals (default 1.5: at the pass@k temperature the "
                   "first sampled answer is nearly always VERIFIED, and the arms cannot differ)")
    e.add_argument("--steer", action=argparse.BooleanOptionalAction, default=True,
                   help="decode with steering towards a first fit's waves, as `allocate` does (default on; the single "
                   "shot is also measured without it)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--timeout", type=float, default=60.0)
    e.add_argument("--solver-timeout", type=float, default=20.0, metavar="S",
                   help="seconds the SMT allocator may take per function for the comparison with the solver (default "
                   "20; 0: no solver column)")
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("-j", "--jobs", type=int, default=1, help="functions evaluated in parallel processes (default 1)")
    e.add_argument("-o", "--out", default="build/eval", metavar="DIR")
    e.add_argument("--resume", action="store_true",
                   help="keep the results an interrupted run with the same weights, arguments and functions left in "
                   "DIR/partial.jsonl and evaluate only the rest (without it a run starts again)")
    e.set_defaults(func=cmd_eval)
