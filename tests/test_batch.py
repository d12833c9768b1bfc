"""Batch verification and scale-out: a directory or manifest of pairs, local worker processes,
a real Dask LocalCluster on the loopback address, a worker killed mid-run, and `verilocc
fuzz` on Dask giving the summary it gives without it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from verilocc.batch.engine import chunked, in_order, stream_dask
from verilocc.batch.pairs import Pair, find_pairs
from verilocc.batch.records import verify_chunk, worst_exit
from verilocc.cli import main
from verilocc.verify import Options

from .conftest import FIXTURES, ROOT, verify_pair

LLVM19 = FIXTURES / "targets" / "llvm19"
TARGETS = ("gfx906", "gfx1010")  # 6 small pairs: vadd, reduce_sum, sgemm_naive each


@pytest.fixture
def batch_dir(tmp_path: Path) -> Path:
    root = tmp_path / "pairs"
    for target in TARGETS:
        shutil.copytree(LLVM19 / target, root / target)
    return root


def rejected_copy(root: Path) -> None:
    """gfx906/vadd with one register changed: the second load overwrites the first one's live value."""
    shutil.copy(LLVM19 / "gfx906" / "vadd.pre.mir", root / "clobber.pre.mir")
    text = (LLVM19 / "gfx906" / "vadd.post.mir").read_text()
    changed = text.replace("renamable $vgpr7 = GLOBAL_LOAD_DWORD", "renamable $vgpr6 = GLOBAL_LOAD_DWORD", 1)
    assert changed != text
    (root / "clobber.post.mir").write_text(changed)


def truncated_copy(root: Path) -> None:
    """gfx906/reduce_sum with its post-RA file cut before the closing `...`: bad input."""
    shutil.copy(LLVM19 / "gfx906" / "reduce_sum.pre.mir", root / "cut.pre.mir")
    text = (LLVM19 / "gfx906" / "reduce_sum.post.mir").read_text()
    (root / "cut.post.mir").write_text(text[: len(text) // 2])


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_jobs_give_the_same_bytes_and_verdicts_as_one_by_one(batch_dir: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    one, two = tmp_path / "j1.jsonl", tmp_path / "j2.jsonl"
    assert run(["verify", str(batch_dir), "--format", "jsonl", "-o", str(one)], capsys)[0] == 0
    code, _, err = run(["verify", str(batch_dir), "--format", "jsonl", "--jobs", "2", "-o", str(two)], capsys)
    assert code == 0
    assert one.read_bytes() == two.read_bytes()
    assert "2 local worker process(es)" in err and "VERIFIED (exit 0)" in err
    records = lines(one)
    assert [r["pair"] for r in records] == sorted(f"{t}/{k}" for t in TARGETS for k in ("reduce_sum", "sgemm_naive", "vadd"))
    for r in records:
        alone = verify_pair(Path(r["post"]), Path(r["pre"]))
        assert r["verdict"] == alone.verdict.value
        assert len(r["findings"]) == len(alone.findings)
        assert "seconds" not in r
    timed = tmp_path / "timed.jsonl"
    run(["verify", str(batch_dir), "--format", "jsonl", "--timings", "-o", str(timed)], capsys)
    assert all(r["seconds"] > 0 for r in lines(timed))


def test_rejected_pair_sets_the_exit_code_and_is_not_hidden(batch_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rejected_copy(batch_dir)
    truncated_copy(batch_dir)
    code, out, _ = run(["verify", str(batch_dir)], capsys)
    assert code == 1
    assert "REJECTED clobber\n" in out and "error [value-flow/wrong-value] vadd" in out
    # A subset of layers makes every correct pair UNKNOWN; the rejection still wins.
    code, out, _ = run(["verify", str(batch_dir), "--layers", "constraints,value-flow"], capsys)
    assert code == 1 and "UNKNOWN gfx906/vadd" in out
    (batch_dir / "clobber.post.mir").unlink()
    (batch_dir / "clobber.pre.mir").unlink()
    code, out, _ = run(["verify", str(batch_dir), "--layers", "constraints,value-flow"], capsys)
    assert code == 2, out  # bad input beats unknown
    (batch_dir / "cut.post.mir").unlink()
    (batch_dir / "cut.pre.mir").unlink()
    assert run(["verify", str(batch_dir), "--layers", "constraints,value-flow"], capsys)[0] == 3
    assert run(["verify", str(batch_dir)], capsys)[0] == 0


def test_worst_verdict_order() -> None:
    def records(*verdicts: str) -> list[dict[str, Any]]:
        return [{"verdict": v} for v in verdicts]

    assert worst_exit(records("VERIFIED", "UNKNOWN", "REJECTED", "BAD-INPUT")) == 1
    assert worst_exit(records("UNKNOWN", "BAD-INPUT", "VERIFIED")) == 2
    assert worst_exit(records("VERIFIED", "UNKNOWN")) == 3
    assert worst_exit(records("VERIFIED")) == 0


def test_bad_file_is_reported_for_its_pair_and_the_batch_goes_on(batch_dir: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    truncated_copy(batch_dir)
    (batch_dir / "gfx1010" / "vadd.pre.mir").unlink()  # a post-RA file without its partner
    out = tmp_path / "out.jsonl"
    code, _, err = run(["verify", str(batch_dir), "--format", "jsonl", "--jobs", "2", "-o", str(out)], capsys)
    assert code == 2
    by_pair = {r["pair"]: r for r in lines(out)}
    cut = by_pair["cut"]
    assert cut["verdict"] == "BAD-INPUT" and cut["exit"] == 2
    place, message = cut["error"].split(": error: ")
    file, line, column = place.rsplit(":", 2)
    assert file.endswith("cut.post.mir") and int(line) > 0 and int(column) >= 0 and "truncated" in message
    assert by_pair["gfx1010/vadd"]["verdict"] == "BAD-INPUT" and "vadd.pre.mir" in by_pair["gfx1010/vadd"]["error"]
    assert sum(r["verdict"] == "VERIFIED" for r in by_pair.values()) == 5
    assert "Traceback" not in err


def test_manifest(batch_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rejected_copy(batch_dir)
    manifest = batch_dir / "pairs.txt"
    manifest.write_text("# post  pre\n\nclobber.post.mir clobber.pre.mir\n"
                        "gfx906/vadd.post.mir   gfx906/vadd.pre.mir  # the original\n")
    code, out, _ = run(["verify", "--manifest", str(manifest)], capsys)
    assert code == 1
    assert out.splitlines()[0] == "REJECTED clobber" and "VERIFIED gfx906/vadd" in out
    manifest.write_text("clobber.post.mir clobber.pre.mir\n  gfx906/vadd.post.mir\n")
    code, _, err = run(["verify", "--manifest", str(manifest)], capsys)
    assert code == 2 and err.startswith(f"{manifest}:2:3: error: expected `POST PRE`")


def test_one_pair_refuses_batch_options(capsys: pytest.CaptureFixture[str]) -> None:
    post = LLVM19 / "gfx906" / "vadd.post.mir"
    code, _, err = run(["verify", str(post), "--pre", str(post.with_name("vadd.pre.mir")), "--jobs", "2"], capsys)
    assert code == 2 and "--jobs applies to a batch" in err


def test_dask_missing_says_what_to_install(batch_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now raises ImportError
    code, _, err = run(["verify", str(batch_dir), "--dask"], capsys)
    assert code == 2 and "pip install 'verilocc[cluster]'" in err
    code, _, err = run(["fuzz", "--examples", "1", "--dask"], capsys)
    assert code == 2 and "pip install 'verilocc[cluster]'" in err


def test_local_cluster_verifies_a_batch(batch_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    rejected_copy(batch_dir)
    local, dask = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    assert run(["verify", str(batch_dir), "--format", "jsonl", "-o", str(local)], capsys)[0] == 1
    code, _, err = run(["verify", str(batch_dir), "--format", "jsonl", "--dask", "--jobs", "2", "--chunk", "2",
                        "-o", str(dask)], capsys)
    assert code == 1 and "Dask LocalCluster, 2 worker(s)" in err
    assert dask.read_bytes() == local.read_bytes()


def untimed(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def dying_chunk(pairs: list[Pair], opts: Options, markers: str) -> list[dict[str, Any]]:
    """The batch's chunk function, except that the first attempt at a chunk holding a vadd
    pair kills its own worker process (the marker file says the attempt was made)."""
    marker = Path(markers) / pairs[0].name.replace("/", "_")
    if any(p.name.endswith("vadd") for p in pairs) and not marker.exists():
        marker.write_text(str(os.getpid()))
        os._exit(1)
    return verify_chunk(pairs, opts)


@pytest.mark.parametrize("allowed_failures", [3, 0], ids=["rescheduled", "resubmitted"])
def test_worker_killed_mid_run_loses_no_result(batch_dir: Path, tmp_path: Path, allowed_failures: int) -> None:
    """Two of the three chunks kill their worker on the first attempt. With Dask's default the
    scheduler runs them again elsewhere; with `allowed-failures` 0 it gives up (KilledWorker)
    and the chunk is submitted afresh. Either way every chunk's result arrives exactly once."""
    distributed = pytest.importorskip("distributed")
    import dask

    pairs = find_pairs(str(batch_dir))
    opts = Options()
    chunks = chunked(pairs, 2)
    markers = tmp_path / "markers"
    markers.mkdir()
    with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                     dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        arrived = list(stream_dask(client, dying_chunk, chunks, (opts, str(markers)), in_flight=4))
    assert sorted(index for index, _ in arrived) == list(range(len(chunks)))
    assert len(list(markers.iterdir())) == 2  # two workers died
    records = [r for _, results in sorted(arrived) for r in results]
    assert untimed(records) == untimed(verify_chunk(pairs, opts))


def test_in_order_releases_a_prefix_as_soon_as_it_is_complete() -> None:
    seen: list[str] = []

    def racing() -> Any:
        for index in (2, 0, 1, 3):
            seen.append(f"done {index}")
            yield index, index

    for result in in_order(racing()):
        seen.append(f"out {result}")
    assert seen == ["done 2", "done 0", "out 0", "done 1", "out 1", "out 2", "done 3", "out 3"]


def test_fuzz_on_dask_gives_the_same_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("distributed")
    save = str(tmp_path / "found")
    code, alone, _ = run(["fuzz", "--examples", "8", "--seed", "5", "--save", save], capsys)
    dask_code, on_dask, _ = run(["fuzz", "--examples", "8", "--seed", "5", "--save", save, "--dask", "--jobs", "2",
                                 "--chunk", "3"], capsys)
    assert (code, alone) == (dask_code, on_dask)
    summary = json.loads(alone)
    assert summary["examples"] == 8 and summary["verdicts"]["reference VERIFIED"] == 8


def test_fuzz_on_a_running_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--scheduler`: a cluster started as Dask documents it (`dask scheduler`, `dask worker`),
    here on the loopback address with one worker process."""
    pytest.importorskip("distributed")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    address_file = tmp_path / "scheduler.json"
    started = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                 "--port", "0", "--no-dashboard", "--scheduler-file", str(address_file)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 30
        while not address_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        started.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                         str(address_file), "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = json.loads(address_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        save = str(tmp_path / "found")
        code, alone, _ = run(["fuzz", "--examples", "4", "--seed", "7", "--save", save], capsys)
        cluster_code, on_cluster, err = run(["fuzz", "--examples", "4", "--seed", "7", "--save", save,
                                             "--scheduler", address], capsys)
        assert (code, alone) == (cluster_code, on_cluster), err
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=30)


def test_one_pair_loads_neither_the_batch_package_nor_dask() -> None:
    """`verilocc verify ALLOC --pre PRE` starts fast: the batch runners stay unimported."""
    post = LLVM19 / "gfx906" / "vadd.post.mir"
    argv = ["verify", str(post), "--pre", str(post.with_name("vadd.pre.mir"))]
    script = ("import sys\nfrom verilocc.cli import main\n"
              f"code = main({argv!r})\n"
              "print(code, sorted(m for m in sys.modules if m.startswith(('verilocc.batch', 'distributed', 'dask'))))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.splitlines()[-1] == "0 []", done.stderr
