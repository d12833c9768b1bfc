"""`verilocc show` and `verify --format html`: the occupancy grid is right, the page is
self-contained and escapes its input, the figure is drawn, and in a real headless browser
(Debian's chromium through chromedriver) the grid, the curve and every finding are drawn and
clicking a finding moves the grid to it.

The REJECTED example (`docs/view/vadd.clobbered.post.mir`) is a real wrong allocation: the
fuzzer's `clobber_def` operator applied to LLVM's allocation of examples/gfx90a/vadd, which
makes the load at line 205 write $vgpr1 while %8 still lives there (read at line 210).
Screenshots are kept under build/test-view/ (not committed).
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from verilocc import cli
from verilocc.analysis.operands import physreg_at
from verilocc.findings import Finding, Place
from verilocc.fuzz.mutations import clobber_def
from verilocc.mir.parser import read_module
from verilocc.mir.printer import print_module
from verilocc.pairing.alignment import Role
from verilocc.verify import Options, function_target, prepare_pair, verify_modules
from verilocc.view.show import report_page
from verilocc.view.model import build_side
from verilocc.view.occupancy import build_occupancy
from verilocc.view.resources import resources

from .conftest import CORPUS, EXAMPLES, ROOT

VADD = EXAMPLES / "gfx90a" / "vadd"
SGEMM = EXAMPLES / "gfx90a" / "sgemm_naive"
CLOBBERED = ROOT / "docs" / "view" / "vadd.clobbered.post.mir"
ARTIFACTS = ROOT / "build" / "test-view"


def _show(tmp_path: Path, post: Path, pre: Path | None, name: str = "view.html", *extra: str) -> Path:
    out = tmp_path / name
    argv = ["show", str(post), "-o", str(out), *extra] + (["--pre", str(pre)] if pre else [])
    assert cli.main(argv) == 0
    return out


def _data(page: Path) -> dict[str, Any]:
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="verilocc-data">(.*?)</script>', text, re.S)
    assert m is not None
    return json.loads(m.group(1))


# --- the data ---------------------------------------------------------------------------------
def test_the_rejected_example_is_the_mutation_operators_output() -> None:
    mutant = clobber_def(read_module(f"{VADD}.post.mir"), random.Random(0))
    assert mutant is not None and mutant.line == 205
    assert print_module(mutant.module) == CLOBBERED.read_text(encoding="utf-8")


@pytest.mark.parametrize("kernel", ["vadd", "sgemm_naive", "reduce_sum", "softmax_row"])
def test_a_register_holds_the_virtual_register_just_defined_in_it(kernel: str) -> None:
    """Right after a paired instruction defines %v in $r, the grid says $r holds %v: the
    labels are layer 2's value flow, not a guess."""
    post_m, pre_m = read_module(f"{EXAMPLES}/gfx90a/{kernel}.post.mir"), read_module(f"{EXAMPLES}/gfx90a/{kernel}.pre.mir")
    post, pre = post_m.functions[0], pre_m.functions[0]
    pair = prepare_pair(post, pre, function_target(post, None, post.file))
    occ = build_occupancy(post, pair)
    assert occ.with_virtual
    column = {u: k for k, c in enumerate(occ.columns) for u in c.units}
    first = {b.number: start for b, (_, start) in zip(post.blocks, occ.block_starts)}
    checked = 0
    for k, block in enumerate(post.blocks):
        for step in pair.alignment.steps.get(pair.post.blocks[k].number, []):
            if step.role is not Role.MATCHED:
                continue
            pi = pair.pre.block(pair.post.blocks[k].number).instructions[step.pre]
            qi = block.instructions[step.post]
            for po, qo in zip(pi.operands, qi.operands):
                if po.kind != "reg" or not po.is_def or po.vreg is None or qo.phys is None or "dead" in qo.flags:
                    continue
                for u in physreg_at(post, qo, qo.phys).units:
                    if u in column:
                        value = occ.value_at(first[block.number] + step.post, column[u])
                        assert value is not None and occ.values[value].label == f"%{po.vreg}", (qi.line, qo.text)
                        checked += 1
    assert checked > 10


def test_the_clobber_is_placed_writer_then_reader() -> None:
    post, pre = read_module(str(CLOBBERED)), read_module(f"{VADD}.pre.mir")
    report = verify_modules(post, pre, Options())
    side = build_side(post, pre, report, None)
    fv = side.functions[0]
    lines = [p.line for p in fv.occupancy.points]
    v1 = [c.name for c in fv.occupancy.columns].index("v1")
    mark = next(m for m in fv.marks if m.finding.place.line == 210 and m.finding.kind == "wrong-value")
    assert mark.columns == (v1,)
    assert mark.reader is not None and lines[mark.reader] == 210
    assert mark.writer is not None and lines[mark.writer] == 205  # the load that writes $vgpr1
    # $vgpr1 holds %8 when line 203 reads it; the load at 205 puts %13 there (and the allocated
    # program's own liveness has $vgpr1 free at 204: it does not know %8 is needed again).
    labels = fv.occupancy.values
    before = fv.occupancy.value_at(lines.index(203), v1)
    assert fv.occupancy.value_at(lines.index(204), v1) is None
    after = fv.occupancy.value_at(lines.index(205), v1)
    assert before is not None and labels[before].label == "%8"
    assert after is not None and labels[after].label == "%13"


def test_resources_agree_with_the_allocators_usage_and_the_target() -> None:
    from verilocc.allocators.usage import register_usage

    for kernel in ("vadd", "sgemm_naive", "softmax_row"):
        post = read_module(f"{EXAMPLES}/gfx90a/{kernel}.post.mir")
        side = build_side(post, None, verify_modules(post, None, Options()), None)
        res = side.functions[0].resources
        usage = register_usage(post.functions[0], side.functions[0].target)
        assert (res.vgprs, res.agprs, res.sgprs, res.waves) == (usage["vgpr"], usage["agpr"], usage["sgpr"], usage["waves"])
        assert res.peak_live == max(res.vector_live) and res.peak_live <= res.vgprs + res.agprs


def test_the_large_kernel_needs_registers_freed_for_a_second_wave(corpus: Path) -> None:
    post, pre = read_module(f"{corpus}/gfx90a/fa_d128_kv4.post.mir"), read_module(f"{corpus}/gfx90a/fa_d128_kv4.pre.mir")
    fn = post.functions[0]
    target = function_target(fn, None, post.file)
    occ = build_occupancy(fn, prepare_pair(fn, pre.functions[0], target))
    res = resources(fn, target, occ)
    assert res.waves == 1 and res.max_waves == 8
    # 2 waves allow 256 vector registers on gfx90a (512 per SIMD, granule 8).
    assert dict(res.vector_thresholds)[2] == 256 and res.peak_live > 256
    assert res.free_at_peak == res.peak_live - 256
    assert max(res.free_per_point) == res.peak_live - 256


# --- the page ---------------------------------------------------------------------------------
def test_the_page_is_self_contained_and_the_same_bytes_twice(tmp_path: Path) -> None:
    a = _show(tmp_path, CLOBBERED, Path(f"{VADD}.pre.mir"), "a.html")
    b = _show(tmp_path, CLOBBERED, Path(f"{VADD}.pre.mir"), "b.html")
    text = a.read_text(encoding="utf-8")
    assert a.read_bytes() == b.read_bytes()
    assert not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", text)
    assert "http://" not in text and "https://" not in text
    data = _data(a)
    (side,) = data["sides"]
    assert side["verdict"] == "REJECTED"
    fn = side["functions"][0]
    assert len(fn["findings"]) == 4 and len(fn["text"]) == len(fn["lines"]) == len(fn["kind"])
    assert all(len(r) % 3 == 0 for r in fn["runs"])


def test_mir_text_and_messages_are_escaped(tmp_path: Path) -> None:
    post, pre = read_module(f"{VADD}.post.mir"), read_module(f"{VADD}.pre.mir")
    nasty = "</script><img src=x onerror=alert(1)> & <!--"
    extra = [Finding("interference", "constraints", Place(post.file, "vadd", 1, 0, 205, 5), nasty, source=nasty)]
    report = verify_modules(post, pre, Options(), extra_findings=extra)
    page = report_page(report, post, pre, None)
    assert "<img" not in page and "</script><" not in page and "<!--" not in page
    out = tmp_path / "nasty.html"
    out.write_text(page, encoding="utf-8")
    assert any(f["message"] == nasty for f in _data(out)["sides"][0]["functions"][0]["findings"])


def test_verify_format_html_keeps_the_verdicts_exit_code(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert cli.main(["verify", str(CLOBBERED), "--pre", f"{VADD}.pre.mir", "--format", "html", "-o", str(out)]) == 1
    assert _data(out)["sides"][0]["verdict"] == "REJECTED"
    assert cli.main(["verify", f"{VADD}.post.mir", "--pre", f"{VADD}.pre.mir", "--format", "html", "-o", str(out)]) == 0
    assert _data(out)["sides"][0]["functions"][0]["findings"] == []


def test_without_the_virtual_program_cells_name_the_writing_instruction(tmp_path: Path) -> None:
    fn = _data(_show(tmp_path, Path(f"{VADD}.post.mir"), None))["sides"][0]["functions"][0]
    assert fn["virtual"] is False and fn["verdict"] == "UNKNOWN"
    assert any(label.startswith("$vgpr1 = GLOBAL_LOAD_DWORD") or label.startswith("$vgpr7 = GLOBAL_LOAD_DWORD")
               for label, _ in fn["values"])


def test_compare_puts_two_allocations_side_by_side(tmp_path: Path) -> None:
    page = _show(tmp_path, Path(f"{VADD}.post.mir"), Path(f"{VADD}.pre.mir"), "cmp.html", "--compare", str(CLOBBERED))
    sides = _data(page)["sides"]
    assert [s["verdict"] for s in sides] == ["VERIFIED", "REJECTED"]
    assert [s["functions"][0]["name"] for s in sides] == ["vadd", "vadd"]


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli.main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("case", ["missing", "function", "suffix", "over-input"])
def test_bad_input_exits_2_with_one_line(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pre = tmp_path / "vadd.pre.mir"
    shutil.copy(f"{VADD}.pre.mir", pre)
    original = pre.read_bytes()
    argv = {
        "missing": ["show", str(tmp_path / "nope.mir"), "-o", str(tmp_path / "v.html")],
        "function": ["show", f"{VADD}.post.mir", "--function", "nope", "-o", str(tmp_path / "v.html")],
        "suffix": ["show", f"{VADD}.post.mir", "-o", str(tmp_path / "v.svg")],
        "over-input": ["show", f"{VADD}.post.mir", "--pre", str(pre), "-o", str(pre.with_suffix(".html"))],
    }[case]
    if case == "over-input":
        argv[-1] = str(tmp_path / "vadd.pre.html")
        (tmp_path / "vadd.pre.html").symlink_to(pre)
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "error:" in err, (rc, err)
    assert "Traceback" not in err
    assert pre.read_bytes() == original


# --- the figure -------------------------------------------------------------------------------
def _red_pixels(png: Path) -> int:
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(str(png))
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return int(np.sum((r > 0.75) & (g < 0.2) & (b < 0.2)))


def test_the_png_shows_the_clobber_and_is_the_same_bytes_twice(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    a = _show(tmp_path, CLOBBERED, Path(f"{VADD}.pre.mir"), "a.png")
    b = _show(tmp_path, CLOBBERED, Path(f"{VADD}.pre.mir"), "b.png")
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and a.read_bytes() == b.read_bytes()
    good = _show(tmp_path, Path(f"{VADD}.post.mir"), Path(f"{VADD}.pre.mir"), "good.png")
    assert _red_pixels(a) > 200 > _red_pixels(good)


# --- in a real browser ------------------------------------------------------------------------
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
BROWSER_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1500,1100")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("Debian's chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install 'verilocc[view]')")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in BROWSER_ARGS:
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(driver: Any, page: Path) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(page.resolve().as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def _keep(driver: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / name))


_COUNT_COLOURS = """
const c = arguments[0], ctx = c.getContext('2d');
const d = ctx.getImageData(0, 0, c.width, c.height).data, seen = new Set();
let blue = 0;
for (let i = 0; i < d.length; i += 4) {
  seen.add((d[i] >> 4) * 256 + (d[i + 1] >> 4) * 16 + (d[i + 2] >> 4));
  if (d[i + 2] > 150 && d[i] < 80 && d[i + 1] < 140) blue++;
}
return [seen.size, blue];
"""

_PIXEL = """
const pane = window.verilocc.panes[arguments[0]], at = pane.locate(arguments[1], arguments[2]);
const rect = pane.canvas.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
const px = pane.ctx.getImageData(Math.round((at.x - rect.left) * dpr), Math.round((at.y - rect.top) * dpr), 1, 1).data;
return [px[0], px[1], px[2], at.visible];
"""


@pytest.mark.browser
def test_the_browser_draws_the_grid_the_curve_and_each_finding(browser: Any, tmp_path: Path) -> None:
    page = _show(tmp_path, CLOBBERED, Path(f"{VADD}.pre.mir"))
    _open(browser, page)
    fn = _data(page)["sides"][0]["functions"][0]
    grid = browser.find_element("css selector", "canvas.grid")
    curve = browser.find_element("css selector", "canvas.curve")
    colours, _ = browser.execute_script(_COUNT_COLOURS, grid)
    assert colours > 20  # live-range bars in many colours
    _, blue = browser.execute_script(_COUNT_COLOURS, curve)
    assert blue > 50  # the VGPR pressure line
    items = browser.find_elements("css selector", "li.finding")
    assert len(items) == len(fn["findings"]) == 4
    for i, (item, f) in enumerate(zip(items, fn["findings"])):
        assert f["message"] in item.text
        item.click()
        assert browser.execute_script("return document.querySelector('.pane').dataset.activeFinding") == str(i)
        assert "active" in item.get_attribute("class")
        writer = f["writer"] if f["writer"] is not None or f["reader"] == f["point"] else f["point"]
        if f["cols"] and writer is not None:
            r, g, b, visible = browser.execute_script(_PIXEL, 0, writer, f["cols"][0])
            assert visible and r > 150 and g < 90 and b < 90, (i, r, g, b)  # the overwritten register, red
    _keep(browser, "rejected-vadd.png")


@pytest.mark.browser
def test_clicking_a_finding_scrolls_the_grid_to_it(browser: Any, tmp_path: Path) -> None:
    mutant = clobber_def(read_module(f"{SGEMM}.post.mir"), random.Random(7))
    assert mutant is not None
    bad = tmp_path / "sgemm.bad.post.mir"
    bad.write_text(print_module(mutant.module), encoding="utf-8")
    page = _show(tmp_path, bad, Path(f"{SGEMM}.pre.mir"))
    _open(browser, page)
    fn = _data(page)["sides"][0]["functions"][0]
    wrap = browser.find_element("css selector", ".grid-wrap")
    assert browser.execute_script("return arguments[0].scrollHeight > 2 * arguments[0].clientHeight", wrap)
    tops = []
    for item, f in zip(browser.find_elements("css selector", "li.finding"), fn["findings"]):
        browser.execute_script("arguments[0].scrollTop = 0", wrap)
        item.click()
        tops.append(browser.execute_script("return arguments[0].scrollTop", wrap))
        target = f["writer"] if f["writer"] is not None else f["point"]
        if target is not None and target * 14 > 600:  # rows are 14 px: far enough down to need a scroll
            assert tops[-1] > 0
            _, _, _, visible = browser.execute_script(_PIXEL, 0, target, f["cols"][0] if f["cols"] else 0)
            assert visible
    assert max(tops) > 0
    _keep(browser, "sgemm-scrolled.png")


@pytest.mark.browser
def test_the_browser_shows_markup_in_messages_as_text(browser: Any, tmp_path: Path) -> None:
    post, pre = read_module(f"{VADD}.post.mir"), read_module(f"{VADD}.pre.mir")
    nasty = "</script><img src=x onerror=\"document.title='pwned'\"> <b>bold</b>"
    extra = [Finding("interference", "constraints", Place(post.file, "vadd", 1, 0, 205, 5), nasty)]
    page = tmp_path / "nasty.html"
    page.write_text(report_page(verify_modules(post, pre, Options(), extra_findings=extra), post, pre, None),
                    encoding="utf-8")
    _open(browser, page)
    assert browser.execute_script("return document.querySelectorAll('img, b').length") == 0
    assert browser.title != "pwned"
    assert any(nasty in e.text for e in browser.find_elements("css selector", "li.finding"))


@pytest.mark.slow
@pytest.mark.browser
def test_the_largest_kernel_opens(browser: Any, tmp_path: Path) -> None:
    if not (CORPUS / "gfx90a" / "fa_d128_kv4.post.mir").exists():
        pytest.skip("no corpus")
    page = _show(tmp_path, CORPUS / "gfx90a" / "fa_d128_kv4.post.mir", CORPUS / "gfx90a" / "fa_d128_kv4.pre.mir")
    assert page.stat().st_size < 5_000_000
    _open(browser, page)
    colours, _ = browser.execute_script(_COUNT_COLOURS, browser.find_element("css selector", "canvas.grid"))
    assert colours > 50
    wrap = browser.find_element("css selector", ".grid-wrap")
    browser.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", wrap)
    browser.execute_script("return new Promise(r => requestAnimationFrame(() => r()))")
    colours, _ = browser.execute_script(_COUNT_COLOURS, browser.find_element("css selector", "canvas.grid"))
    assert colours > 20  # the last rows are drawn too
    _keep(browser, "fa_d128_kv4.png")
