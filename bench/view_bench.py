"""Page size and time to first paint of `verilocc show` on the largest corpus kernel.

    .venv/bin/python bench/view_bench.py [--kernel gfx90a/fa_d128_kv4] [--runs 5] [--corpus ../shared/corpus]

Writes the page with `verilocc show ALLOC --pre PRE -o build/view-bench/KERNEL.html` (timed:
verification with all layers plus building the view), then opens it RUNS times in Debian's
headless chromium (through chromedriver and selenium, a fresh page each time) and prints the
median of: first contentful paint (the browser's own `paint` entry), and the time from
navigation start until the page has drawn every grid and curve (`window.veriloccReady`, set
by the page after its first complete draw, which runs before the browser's first paint) and
until two animation frames later (`window.veriloccPainted`: the drawn canvases are on the
screen). Also the time to draw one screen of the grid again (a scroll to the middle). Needs chromium and chromium-driver (apt) and selenium
(`pip install 'verilocc[view]'`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1500,1100")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="gfx90a/fa_d128_kv4")
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    base = Path(args.corpus) / args.kernel
    out = ROOT / "build" / "view-bench" / (args.kernel.replace("/", "_") + ".html")
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "verilocc", "show", f"{base}.post.mir", "--pre", f"{base}.pre.mir", "-o", str(out)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    build_s = time.perf_counter() - t0
    data = out.read_text(encoding="utf-8")
    n_points = data.count('"lines":')  # one per function
    print(f"kernel {args.kernel}: page {out.stat().st_size / 1e6:.2f} MB ({out.stat().st_size} bytes), "
          f"`verilocc show` {build_s:.1f} s (verify, all layers, and the view)", flush=True)

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for a in ARGS:
        options.add_argument(a)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    fcp: list[float] = []
    ready: list[float] = []
    painted: list[float] = []
    redraw: list[float] = []
    try:
        for _ in range(args.runs):
            driver.get("about:blank")
            driver.get(out.resolve().as_uri())
            WebDriverWait(driver, 60).until(lambda d: d.execute_script("return window.veriloccPainted !== undefined"))
            got = driver.execute_script(
                "const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint');"
                "return [p ? p.startTime : null, window.veriloccReady, window.veriloccPainted];")
            if got[0] is not None:
                fcp.append(got[0])
            ready.append(got[1])
            painted.append(got[2])
            redraw.append(driver.execute_script(
                "const pane = window.verilocc.panes[0], t = performance.now();"
                "pane.wrap.scrollTop = pane.wrap.scrollHeight / 2; pane.draw(); return performance.now() - t;"))
    finally:
        driver.quit()
    print(f"headless chromium ({args.runs} loads, median, ms after navigation start): grid and curve drawn "
          f"{statistics.median(ready):.0f}, first contentful paint "
          f"{f'{statistics.median(fcp):.0f}' if fcp else 'not reported'}, two frames later "
          f"{statistics.median(painted):.0f}; one screen redrawn after a scroll {statistics.median(redraw):.1f} ms "
          f"({n_points} function(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
