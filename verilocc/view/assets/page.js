// verilocc show: the register-occupancy view of an allocation. Data comes from the JSON block
// #verilocc-data; every string from it enters the page as text (textContent, canvas text),
// never as markup. The grid draws only the rows and columns on screen.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("verilocc-data").textContent);
  const ROW = 14, HEAD = 34, GUTTER = 70, BLOCK = 84, BAR = 120, GAP = 8, TEXT_PAD = 10;
  const ZOOMS = [2, 3, 4, 5, 6, 8, 10, 12, 16];
  const FILE_NAMES = { s: "SGPR", c: "VCC", v: "VGPR", a: "AGPR" };
  const tip = document.getElementById("tip");
  const app = document.getElementById("app");
  const panes = [];

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function colourOf(fn, v) {
    const label = fn.values[v][0];
    if (label === "no value") return "#9a9a9a";
    if (label === "spilled SGPRs") return "#e9a23b";
    if (label.endsWith("(fixed)") || label.endsWith("(live-in)")) return "hsl(" + ((v * 47) % 360) + ",18%,70%)";
    // A virtual register keeps its colour in both allocations of --compare: by its number.
    const m = /^%(\d+)$/.exec(label);
    const k = m ? parseInt(m[1], 10) : v;
    return "hsl(" + ((k * 137.508) % 360).toFixed(1) + ",62%," + (k % 2 ? "60%" : "70%") + ")";
  }

  function badge(verdict) {
    return el("span", "badge " + (verdict || "none"), verdict || "not verified");
  }

  function showTip(ev, text) {
    tip.textContent = text;
    tip.style.display = "block";
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 14);
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }
  function hideTip() { tip.style.display = "none"; }

  function lineRange(fn, start, len) {
    const a = fn.lines[start], b = fn.lines[start + len - 1];
    return a === b ? "line " + a : "lines " + a + "\u2013" + b;
  }

  // ------------------------------------------------------------------------------------
  // One pane: a function of one side (allocation)
  // ------------------------------------------------------------------------------------
  function Pane(fn, sideIndex, fnIndex) {
    this.fn = fn;
    this.side = sideIndex;
    this.fnIndex = fnIndex;
    this.P = fn.lines.length;
    this.colours = fn.values.map((_, v) => colourOf(fn, v));
    this.selectedValue = null;
    this.activeFinding = null;
    this.colW = 4;
    this.findingRows = new Map();
    fn.findings.forEach((f, i) => {
      for (const r of [f.point, f.writer, f.reader]) if (r !== null && r !== undefined) this.findingRows.set(r, i);
    });
    this.blockOf = new Int32Array(this.P);
    fn.blocks.forEach(([, start], k) => {
      const end = k + 1 < fn.blocks.length ? fn.blocks[k + 1][1] : this.P;
      for (let p = start; p < end; p++) this.blockOf[p] = k;
    });
  }

  Pane.prototype.layout = function () {
    const fn = this.fn, files = fn.files;
    this.colX = new Float64Array(files.length);
    let x = 0;
    this.groups = [];
    for (let c = 0; c < files.length; c++) {
      if (c > 0 && files[c] !== files[c - 1]) x += GAP;
      if (c === 0 || files[c] !== files[c - 1]) this.groups.push([files[c], c, x]);
      this.colX[c] = x;
      x += this.colW;
    }
    this.gridW = x;
    this.blockX = GUTTER + this.gridW + 12;
    this.barX = this.blockX + BLOCK;
    this.textX = this.barX + BAR + TEXT_PAD;
    let longest = 0;
    for (const t of fn.text) if (t.length > longest) longest = t.length;
    this.totalW = this.textX + Math.min(longest, 400) * 7.3 + 20;
    this.totalH = HEAD + this.P * ROW + 4;
  };

  Pane.prototype.build = function (parent) {
    const fn = this.fn;
    const root = el("div", "pane");
    root.dataset.side = this.side;
    root.dataset.function = fn.name;
    const h = el("h3");
    h.append(badge(fn.verdict), " ", el("span", null, fn.name + " on " + fn.target + " "), el("span", "file", fn.file));
    root.append(h);
    if (fn.notes.length) root.append(el("div", "notes", "note: " + fn.notes.join("; ")));
    const info = el("div", "info");
    const table = el("table", "summary");
    for (const [k, v] of fn.summary) {
      const tr = el("tr");
      tr.append(el("td", null, k), el("td", null, v));
      table.append(tr);
    }
    info.append(table);
    const list = el("ul", "findings");
    this.findingItems = [];
    if (!fn.findings.length) list.append(el("li", "none", fn.verdict ? "no findings" : "not verified: no findings"));
    fn.findings.forEach((f, i) => {
      const li = el("li", "finding " + f.severity);
      li.tabIndex = 0;
      li.dataset.index = i;
      li.dataset.point = f.point === null ? "" : f.point;
      li.append(el("div", "where", f.severity + " [" + f.layer + "/" + f.kind + "] " + f.file + ":" + f.line + ":" + f.column));
      li.append(el("div", "msg", f.message));
      if (f.counterexample.length) {
        const t = el("table");
        for (const [k, v] of f.counterexample) {
          const tr = el("tr");
          tr.append(el("td", null, k), el("td", null, v));
          t.append(tr);
        }
        li.append(el("div", "where", "counterexample:"), t);
      }
      const src = f.point !== null ? fn.text[f.point] : f.source;
      if (src) li.append(el("div", "src", src));
      li.addEventListener("click", () => this.focusFinding(i));
      li.addEventListener("keydown", (e) => { if (e.key === "Enter") this.focusFinding(i); });
      list.append(li);
      this.findingItems.push(li);
    });
    info.append(list);
    root.append(info);

    this.curve = el("canvas", "curve");
    root.append(this.curve);
    const legend = el("div", "legend");
    const items = [["#1f5fbf", fn.unified ? "VGPR+AGPR live" : "VGPR live"], ["#d35400", "SGPR live"],
      ["#c62828", "budget"], ["#8a8f99", "waves/SIMD thresholds"], ["rgba(255,170,0,.5)", "spill"],
      ["rgba(0,150,150,.45)", "reload"]];
    if (fn.unified) items.splice(1, 0, ["#7b3fb0", "AGPR live"]);
    for (const [c, t] of items) {
      const s = el("span");
      const i = el("i");
      i.style.background = c;
      s.append(i, t);
      legend.append(s);
    }
    root.append(legend);

    const controls = el("div", "controls");
    const zoomOut = el("button", null, "\u2212"), zoomIn = el("button", null, "+");
    zoomOut.title = "narrower register columns";
    zoomIn.title = "wider register columns";
    zoomOut.addEventListener("click", () => this.zoom(-1));
    zoomIn.addEventListener("click", () => this.zoom(1));
    const search = el("input");
    search.type = "search";
    search.placeholder = "find %vreg";
    search.addEventListener("keydown", (e) => { if (e.key === "Enter") this.findValue(search.value.trim()); });
    controls.append(el("span", null, "columns"), zoomOut, zoomIn, search,
      el("span", "legend", fn.virtual ? "cells: the virtual register each physical register holds"
        : "cells: the instruction that last wrote the register (no --pre)"));
    root.append(controls);

    this.wrap = el("div", "grid-wrap");
    this.canvas = el("canvas", "grid");
    this.sizer = el("div", "sizer");
    this.wrap.append(this.canvas, this.sizer);
    root.append(this.wrap);
    this.selection = el("div", "selection");
    root.append(this.selection);
    parent.append(root);
    this.root = root;

    this.wrap.addEventListener("scroll", () => { this.schedule(); this.onScroll(); });
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", hideTip);
    this.canvas.addEventListener("click", (e) => this.click(e));
    this.curve.addEventListener("mousemove", (e) => this.curveHover(e));
    this.curve.addEventListener("mouseleave", hideTip);
    this.curve.addEventListener("click", (e) => this.curveClick(e));
  };

  Pane.prototype.fitZoom = function () {
    const avail = Math.max(200, this.wrap.clientWidth * 0.6 - GUTTER);
    const ncols = Math.max(1, this.fn.files.length);
    let best = ZOOMS[0];
    for (const z of ZOOMS) if (z * ncols + 3 * GAP <= avail) best = z;
    this.colW = best;
  };

  Pane.prototype.zoom = function (dir) {
    const i = ZOOMS.indexOf(this.colW);
    const j = Math.max(0, Math.min(ZOOMS.length - 1, (i < 0 ? 2 : i) + dir));
    this.colW = ZOOMS[j];
    this.resize();
  };

  Pane.prototype.resize = function () {
    this.layout();
    const dpr = window.devicePixelRatio || 1;
    // The sizer's width decides whether there is a horizontal scroll bar, which the height must leave out.
    this.sizer.style.width = Math.max(0, this.totalW) + "px";
    this.sizer.style.height = "0px";
    this.canvas.style.width = "0px";
    this.canvas.style.height = "0px";
    const w = this.wrap.clientWidth, h = this.wrap.clientHeight;
    this.W = w;
    this.H = h;
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    this.canvas.style.width = w + "px";
    this.canvas.style.height = h + "px";
    this.sizer.style.height = Math.max(0, this.totalH - h) + "px";
    this.ctx = this.canvas.getContext("2d");
    this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const cw = this.curve.clientWidth, ch = this.curve.clientHeight;
    this.curve.width = Math.round(cw * dpr);
    this.curve.height = Math.round(ch * dpr);
    this.cctx = this.curve.getContext("2d");
    this.cctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.CW = cw;
    this.CH = ch;
    this.draw();
  };

  Pane.prototype.schedule = function () {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  };

  Pane.prototype.visibleRows = function () {
    const sy = this.wrap.scrollTop;
    const r0 = Math.max(0, Math.floor(sy / ROW));
    const r1 = Math.min(this.P, Math.ceil((sy + this.H - HEAD) / ROW) + 1);
    return [r0, r1];
  };

  // Content coordinates -> canvas coordinates.
  Pane.prototype.rowY = function (r) { return HEAD + r * ROW - this.wrap.scrollTop; };
  Pane.prototype.colXs = function (c) { return GUTTER + this.colX[c] - this.wrap.scrollLeft; };

  Pane.prototype.draw = function () {
    if (!this.ctx) return;
    this.drawGrid();
    this.drawCurve();
  };

  Pane.prototype.firstRun = function (runs, r0) {
    // runs: flat [start, len, value, ...] sorted by start; first run ending after r0
    let lo = 0, hi = runs.length / 3;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (runs[3 * mid] + runs[3 * mid + 1] <= r0) lo = mid + 1; else hi = mid;
    }
    return lo;
  };

  Pane.prototype.drawGrid = function () {
    const ctx = this.ctx, fn = this.fn, W = this.W, H = this.H, colW = this.colW;
    const [r0, r1] = this.visibleRows();
    const sx = this.wrap.scrollLeft;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, W, H);
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, HEAD, W - GUTTER, H - HEAD);
    ctx.clip();
    // Row backgrounds: spill and reload rows, finding rows, the active finding.
    for (let r = r0; r < r1; r++) {
      const k = fn.kind[r], y = this.rowY(r);
      if (k === "S") { ctx.fillStyle = "rgba(255,170,0,.16)"; ctx.fillRect(GUTTER, y, W, ROW); }
      else if (k === "R") { ctx.fillStyle = "rgba(0,150,150,.14)"; ctx.fillRect(GUTTER, y, W, ROW); }
      if (this.findingRows.has(r)) { ctx.fillStyle = "rgba(198,40,40,.07)"; ctx.fillRect(GUTTER, y, W, ROW); }
    }
    // Column stripes per file, so an empty register still shows where it is.
    for (const [file, c0, x0] of this.groups) {
      let c1 = c0;
      while (c1 < fn.files.length && fn.files[c1] === file) c1++;
      ctx.fillStyle = file === "s" ? "#fbf7f0" : file === "a" ? "#f7f3fb" : file === "c" ? "#f5f5f5" : "#f2f6fb";
      ctx.fillRect(GUTTER + x0 - sx, HEAD, (c1 - c0) * colW, H);
    }
    // Live ranges: one bar per run.
    const inset = colW >= 5 ? 1 : 0;
    const dim = this.selectedValue !== null;
    for (let c = 0; c < fn.files.length; c++) {
      const x = this.colXs(c);
      if (x + colW < GUTTER || x > W) continue;
      const runs = fn.runs[c];
      for (let k = this.firstRun(runs, r0); k < runs.length / 3; k++) {
        const start = runs[3 * k], len = runs[3 * k + 1], v = runs[3 * k + 2];
        if (start >= r1) break;
        ctx.globalAlpha = dim && v !== this.selectedValue ? 0.2 : 1;
        ctx.fillStyle = this.colours[v];
        ctx.fillRect(x + inset, this.rowY(start) + 1, colW - 2 * inset, len * ROW - 2);
      }
    }
    ctx.globalAlpha = 1;
    // Reads and writes of each instruction: a dark tick on top (write), a dot (read).
    if (colW >= 4) {
      for (let r = r0; r < r1; r++) {
        const y = this.rowY(r);
        ctx.fillStyle = "rgba(20,20,30,.75)";
        for (const c of fn.writes[r]) ctx.fillRect(this.colXs(c), y + 1, colW, 2);
        for (const c of fn.reads[r]) ctx.fillRect(this.colXs(c) + colW / 2 - 1, y + ROW / 2 - 1, 2, 2);
      }
    }
    // Block boundaries.
    ctx.strokeStyle = "#7a8294";
    ctx.lineWidth = 1;
    for (const [label, start] of fn.blocks) {
      if (start < r0 || start >= r1) continue;
      const y = Math.round(this.rowY(start)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(GUTTER, y);
      ctx.lineTo(W, y);
      ctx.stroke();
    }
    this.drawMarks(r0, r1);
    // Live count per instruction: a bar from green to red, and what to free for one more wave.
    // Scale: the most vector registers the allocation's waves/SIMD allow (the budget at one wave).
    const now = fn.thresholds.find(([w]) => w === fn.waves);
    const budget = now ? now[1] : (fn.unified ? fn.limits.vector : fn.limits.vgpr);
    const bx = this.barX - sx;
    ctx.font = "10px ui-monospace, 'DejaVu Sans Mono', monospace";
    ctx.textBaseline = "middle";
    for (let r = r0; r < r1; r++) {
      const y = this.rowY(r), n = fn.vector[r];
      const frac = Math.min(1, n / Math.max(1, budget));
      ctx.fillStyle = "hsl(" + Math.round(120 * (1 - frac)) + ",70%,45%)";
      ctx.fillRect(bx, y + 3, Math.max(1, frac * (BAR - 44)), ROW - 6);
      ctx.fillStyle = "#1d2330";
      ctx.fillText(String(n), bx + BAR - 42, y + ROW / 2);
      if (fn.free[r] > 0) {
        ctx.fillStyle = "#c62828";
        ctx.fillText("\u2212" + fn.free[r], bx + BAR - 20, y + ROW / 2);
      }
      if (r === fn.peak) {
        ctx.strokeStyle = "#c62828";
        ctx.strokeRect(bx - 1.5, y + 1.5, BAR - 1, ROW - 3);
      }
    }
    // MIR text.
    ctx.font = "11px ui-monospace, 'DejaVu Sans Mono', monospace";
    for (let r = r0; r < r1; r++) {
      ctx.fillStyle = fn.kind[r] === "S" ? "#8a5300" : fn.kind[r] === "R" ? "#006b6b" : "#1d2330";
      ctx.fillText(fn.text[r], this.textX - sx, this.rowY(r) + ROW / 2);
    }
    // Block labels, in their own column.
    ctx.font = "bold 10px system-ui, sans-serif";
    ctx.fillStyle = "#4a5266";
    for (const [label, start] of fn.blocks) {
      if (start < r0 || start >= r1) continue;
      ctx.save();
      ctx.beginPath();
      ctx.rect(this.blockX - sx, this.rowY(start), BLOCK - 6, ROW);
      ctx.clip();
      ctx.fillText(label, this.blockX - sx + 2, this.rowY(start) + ROW / 2);
      ctx.restore();
    }
    ctx.restore();
    this.drawHeader();
    this.drawGutter(r0, r1);
  };

  Pane.prototype.drawMarks = function (r0, r1) {
    const ctx = this.ctx, fn = this.fn, colW = this.colW, W = this.W;
    fn.findings.forEach((f, i) => {
      if (f.point === null) return;
      // The finding's own instruction is the writer unless it is the reader.
      const writer = f.writer !== null || f.reader === f.point ? f.writer : f.point;
      const active = i === this.activeFinding;
      if (active) {
        ctx.strokeStyle = "#f0a500";
        ctx.lineWidth = 2;
        for (const r of [f.point, f.writer, f.reader]) {
          if (r === null || r < r0 - 1 || r > r1) continue;
          ctx.strokeRect(GUTTER + 1, this.rowY(r), W - GUTTER - 2, ROW);
        }
      }
      if (!f.cols.length) return;
      const xs = f.cols.map((c) => this.colXs(c));
      const left = Math.min(...xs), right = Math.max(...xs) + colW;
      if (f.reader !== null && f.writer !== null && f.reader > f.writer) {
        // The stretch over which the clobbered value was still needed.
        ctx.strokeStyle = "#c62828";
        ctx.lineWidth = 2;
        ctx.setLineDash([4, 3]);
        ctx.beginPath();
        const mx = (left + right) / 2;
        ctx.moveTo(mx, this.rowY(f.writer) + ROW);
        ctx.lineTo(mx, this.rowY(f.reader));
        ctx.stroke();
        ctx.setLineDash([]);
      }
      if (writer !== null && writer >= r0 - 1 && writer <= r1) {
        ctx.fillStyle = "rgba(214,32,32,.9)";
        for (const x of xs) ctx.fillRect(x, this.rowY(writer), colW, ROW);
        ctx.strokeStyle = "#7f0000";
        ctx.lineWidth = 1.5;
        ctx.strokeRect(left - 1, this.rowY(writer) - 1, right - left + 2, ROW + 2);
      }
      if (f.reader !== null && f.reader >= r0 - 1 && f.reader <= r1) {
        ctx.strokeStyle = "#c62828";
        ctx.lineWidth = 2;
        ctx.strokeRect(left - 2, this.rowY(f.reader) - 1, right - left + 4, ROW + 2);
        ctx.fillStyle = "#c62828";
        ctx.font = "bold 10px system-ui, sans-serif";
        ctx.textBaseline = "middle";
        ctx.fillText("reads", right + 4, this.rowY(f.reader) + ROW / 2);
      }
    });
  };

  Pane.prototype.drawHeader = function () {
    const ctx = this.ctx, fn = this.fn, colW = this.colW, sx = this.wrap.scrollLeft;
    ctx.fillStyle = "#f6f7f9";
    ctx.fillRect(0, 0, this.W, HEAD);
    ctx.strokeStyle = "#d8dce4";
    ctx.beginPath();
    ctx.moveTo(0, HEAD - 0.5);
    ctx.lineTo(this.W, HEAD - 0.5);
    ctx.stroke();
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, 0, this.W - GUTTER, HEAD);
    ctx.clip();
    ctx.textBaseline = "alphabetic";
    ctx.font = "bold 11px system-ui, sans-serif";
    ctx.fillStyle = "#1d2330";
    this.groups.forEach(([file, c0, x0], k) => {
      const next = k + 1 < this.groups.length ? this.groups[k + 1][2] : this.gridW + 100;
      if (ctx.measureText(FILE_NAMES[file]).width < next - x0 - 2) ctx.fillText(FILE_NAMES[file], GUTTER + x0 - sx, 13);
    });
    ctx.font = "9px ui-monospace, monospace";
    ctx.fillStyle = "#5d6678";
    const every = colW >= 12 ? 1 : colW >= 6 ? 4 : colW >= 3 ? 8 : 16;
    for (let c = 0; c < fn.cols.length; c++) {
      const name = fn.cols[c];
      const num = parseInt(name.replace(/^[a-z_]+/, ""), 10);
      if (fn.files[c] !== "c" && (isNaN(num) || num % every !== 0)) continue;
      const x = this.colXs(c);
      if (x < GUTTER - 30 || x > this.W) continue;
      ctx.fillRect(x, HEAD - 6, 1, 6);
      if (fn.files[c] !== "c" || colW >= 10) ctx.fillText(fn.files[c] === "c" ? name.slice(4) : String(num), x + 1, HEAD - 8);
    }
    ctx.font = "bold 11px system-ui, sans-serif";
    ctx.fillStyle = "#1d2330";
    ctx.fillText("block", this.blockX - sx, 13);
    ctx.fillText("live", this.barX - sx, 13);
    ctx.fillText("instruction (allocated program)", this.textX - sx, 13);
    ctx.restore();
  };

  Pane.prototype.drawGutter = function (r0, r1) {
    const ctx = this.ctx, fn = this.fn;
    ctx.fillStyle = "#f6f7f9";
    ctx.fillRect(0, HEAD, GUTTER, this.H - HEAD);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, HEAD, GUTTER, this.H - HEAD);
    ctx.clip();
    ctx.font = "10px ui-monospace, monospace";
    ctx.textBaseline = "middle";
    for (let r = r0; r < r1; r++) {
      const y = this.rowY(r) + ROW / 2;
      ctx.fillStyle = "#5d6678";
      ctx.fillText(String(fn.lines[r]), 4, y);
      const k = fn.kind[r];
      if (k === "S" || k === "R") {
        ctx.fillStyle = k === "S" ? "#c77800" : "#008080";
        ctx.font = "bold 10px system-ui, sans-serif";
        ctx.fillText(k === "S" ? "spill" : "reload", 34, y);
        ctx.font = "10px ui-monospace, monospace";
      }
      if (this.findingRows.has(r)) {
        ctx.fillStyle = "#c62828";
        ctx.beginPath();
        ctx.moveTo(GUTTER - 2, y);
        ctx.lineTo(GUTTER - 9, y - 5);
        ctx.lineTo(GUTTER - 9, y + 5);
        ctx.fill();
      }
    }
    ctx.restore();
    ctx.fillStyle = "#1d2330";
    ctx.font = "bold 11px system-ui, sans-serif";
    ctx.fillText("line", 4, 13);
  };

  // ------------------------------------------------------------------------------------
  // The pressure curve: live registers per point, the budget and the occupancy thresholds
  // ------------------------------------------------------------------------------------
  Pane.prototype.curveGeometry = function () {
    const left = 46, right = 96, top = 8;
    const vecH = Math.round((this.CH - 22) * 0.7), sgprTop = top + vecH + 14;
    const sgprH = this.CH - sgprTop - 4;
    return { left, right, top, vecH, sgprTop, sgprH, width: this.CW - left - right };
  };

  Pane.prototype.curveX = function (p, g) { return g.left + (this.P <= 1 ? 0 : (p / (this.P - 1)) * g.width); };

  Pane.prototype.drawCurve = function () {
    const ctx = this.cctx, fn = this.fn;
    if (!ctx) return;
    const g = this.curveGeometry();
    ctx.clearRect(0, 0, this.CW, this.CH);
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, this.CW, this.CH);
    let peak = 0, peakS = 0;
    for (const n of fn.vector) if (n > peak) peak = n;
    for (const n of fn.pressure.sgpr) if (n > peakS) peakS = n;
    const budget = fn.unified ? fn.limits.vector : fn.limits.vgpr;
    const now = fn.thresholds.find(([w]) => w === fn.waves);
    const yMax = Math.max(8, peak * 1.15, now ? now[1] * 1.08 : budget * 1.02);
    const yMaxS = Math.max(8, peakS * 1.2, fn.limits.sgpr * 1.05);
    const yv = (n) => g.top + g.vecH - (n / yMax) * g.vecH;
    const ys = (n) => g.sgprTop + g.sgprH - (n / yMaxS) * g.sgprH;
    // Visible rows of the grid.
    const [r0, r1] = this.visibleRows();
    ctx.fillStyle = "rgba(31,95,191,.08)";
    ctx.fillRect(this.curveX(r0, g), g.top, Math.max(2, this.curveX(Math.max(r0, r1 - 1), g) - this.curveX(r0, g)), this.CH - g.top - 4);
    // Block boundaries and spill rows.
    ctx.strokeStyle = "#eceef2";
    ctx.lineWidth = 1;
    for (const [, start] of fn.blocks) {
      const x = Math.round(this.curveX(start, g)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, g.top); ctx.lineTo(x, this.CH - 4); ctx.stroke();
    }
    for (let p = 0; p < this.P; p++) {
      const k = fn.kind[p];
      if (k !== "S" && k !== "R") continue;
      ctx.fillStyle = k === "S" ? "rgba(255,170,0,.5)" : "rgba(0,150,150,.45)";
      ctx.fillRect(this.curveX(p, g) - 1, g.top + g.vecH - 6, 2, 6);
    }
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const labelled = [];  // y of the labels drawn: a label too close to one of them is left out
    const hline = (y, colour, dash, label) => {
      ctx.strokeStyle = colour;
      ctx.setLineDash(dash);
      ctx.beginPath(); ctx.moveTo(g.left, y); ctx.lineTo(g.left + g.width, y); ctx.stroke();
      ctx.setLineDash([]);
      if (labelled.some((other) => Math.abs(other - y) < 10)) return;
      labelled.push(y);
      ctx.fillStyle = colour;
      ctx.fillText(label, g.left + g.width + 4, y);
    };
    // The budget and the occupancy thresholds (most vector registers for w waves/SIMD).
    if (budget <= yMax) hline(Math.round(yv(budget)) + 0.5, "#c62828", [6, 3], "budget " + budget);
    if (fn.limits.sgpr <= yMaxS) hline(Math.round(ys(fn.limits.sgpr)) + 0.5, "#c62828", [6, 3], "SGPR budget " + fn.limits.sgpr);
    for (const [w, n] of fn.thresholds) {
      if (n > yMax) continue;
      hline(Math.round(yv(n)) + 0.5, "#8a8f99", [3, 3], w + (w === 1 ? " wave \u2264 " : " waves \u2264 ") + n);
    }
    for (const [w, n] of fn.sgprThresholds) {
      if (n > yMaxS) continue;
      hline(Math.round(ys(n)) + 0.5, "#8a8f99", [3, 3], w + " waves \u2264 " + n);
    }
    // Series.
    const series = (arr, y, colour) => {
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.3;
      ctx.beginPath();
      for (let p = 0; p < arr.length; p++) {
        const x = this.curveX(p, g);
        if (p === 0) ctx.moveTo(x, y(arr[p])); else ctx.lineTo(x, y(arr[p]));
      }
      ctx.stroke();
    };
    if (fn.unified && fn.pressure.agpr.some((n) => n > 0)) series(fn.pressure.agpr, yv, "#7b3fb0");
    series(fn.vector, yv, "#1f5fbf");
    series(fn.pressure.sgpr, ys, "#d35400");
    // Axes and labels.
    ctx.fillStyle = "#5d6678";
    ctx.textAlign = "right";
    ctx.fillText(String(Math.round(yMax)), g.left - 4, g.top + 4);
    ctx.fillText("0", g.left - 4, g.top + g.vecH);
    ctx.fillText(String(Math.round(yMaxS)), g.left - 4, g.sgprTop + 4);
    ctx.textAlign = "left";
    ctx.fillStyle = "#1d2330";
    ctx.fillText(fn.unified ? "vector live" : "VGPR live", 2, g.top + g.vecH / 2);
    ctx.fillText("SGPR", 2, g.sgprTop + g.sgprH / 2);
    // The peak and what to free there.
    const px = this.curveX(fn.peak, g), py = yv(fn.vector[fn.peak] || 0);
    ctx.fillStyle = "#c62828";
    ctx.beginPath(); ctx.arc(px, py, 3, 0, 2 * Math.PI); ctx.fill();
    // Findings.
    fn.findings.forEach((f, i) => {
      if (f.point === null) return;
      const x = this.curveX(f.point, g);
      ctx.fillStyle = i === this.activeFinding ? "#f0a500" : "#c62828";
      ctx.beginPath(); ctx.moveTo(x, g.top + 7); ctx.lineTo(x - 5, g.top - 1); ctx.lineTo(x + 5, g.top - 1); ctx.fill();
    });
  };

  Pane.prototype.curvePoint = function (e) {
    const g = this.curveGeometry();
    const rect = this.curve.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const p = Math.round(((x - g.left) / Math.max(1, g.width)) * (this.P - 1));
    return Math.max(0, Math.min(this.P - 1, p));
  };

  Pane.prototype.curveHover = function (e) {
    const p = this.curvePoint(e), fn = this.fn;
    showTip(e, "line " + fn.lines[p] + " (" + fn.blocks[this.blockOf[p]][0] + ")\n" +
      "VGPR " + fn.pressure.vgpr[p] + "  AGPR " + fn.pressure.agpr[p] + "  SGPR " + fn.pressure.sgpr[p] +
      "\nvector live " + fn.vector[p] + (fn.free[p] > 0 ? ", " + fn.free[p] + " over the count for " + (fn.waves + 1) + " waves" : "") +
      "\n" + fn.text[p]);
  };

  Pane.prototype.curveClick = function (e) { this.scrollToPoint(this.curvePoint(e), null); };

  // ------------------------------------------------------------------------------------
  // Interaction
  // ------------------------------------------------------------------------------------
  Pane.prototype.cellAt = function (e) {
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left, y = e.clientY - rect.top;
    if (y < HEAD) return null;
    const row = Math.floor((y - HEAD + this.wrap.scrollTop) / ROW);
    if (row < 0 || row >= this.P) return null;
    let col = null;
    if (x >= GUTTER) {
      const cx = x - GUTTER + this.wrap.scrollLeft;
      let lo = 0, hi = this.colX.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (this.colX[mid] <= cx) lo = mid; else hi = mid - 1;
      }
      if (this.colX.length && cx >= this.colX[lo] && cx < this.colX[lo] + this.colW) col = lo;
    }
    return { row, col };
  };

  Pane.prototype.runAt = function (col, row) {
    const runs = this.fn.runs[col];
    const k = this.firstRun(runs, row);
    if (k < runs.length / 3 && runs[3 * k] <= row) return [runs[3 * k], runs[3 * k + 1], runs[3 * k + 2]];
    return null;
  };

  Pane.prototype.hover = function (e) {
    const at = this.cellAt(e);
    if (!at) { hideTip(); return; }
    const fn = this.fn, r = at.row;
    const lines = ["line " + fn.lines[r] + "  " + fn.blocks[this.blockOf[r]][0] + (fn.kind[r] === "S" ? "  (spill)" : fn.kind[r] === "R" ? "  (reload)" : ""),
      fn.text[r]];
    if (at.col !== null) {
      const run = this.runAt(at.col, r);
      const name = fn.cols[at.col];
      if (run) {
        const [start, len, v] = run;
        lines.push("$" + name + " holds " + fn.values[v][0] + (fn.values[v][1] ? " (" + fn.values[v][1] + ")" : "") +
          ", " + lineRange(fn, start, len));
      } else {
        lines.push("$" + name + " is free here");
      }
      if (fn.writes[r].includes(at.col)) lines.push("written by this instruction");
      if (fn.reads[r].includes(at.col)) lines.push("read by this instruction");
    }
    lines.push("live: VGPR " + fn.pressure.vgpr[r] + ", AGPR " + fn.pressure.agpr[r] + ", SGPR " + fn.pressure.sgpr[r] +
      (fn.free[r] > 0 ? "; " + fn.free[r] + " over the count for " + (fn.waves + 1) + " waves" : ""));
    fn.findings.forEach((f) => {
      if ((f.point === r || f.writer === r || f.reader === r) && (at.col === null || !f.cols.length || f.cols.includes(at.col))) {
        lines.push(f.severity + ": " + f.message);
      }
    });
    showTip(e, lines.join("\n"));
  };

  Pane.prototype.click = function (e) {
    const at = this.cellAt(e);
    if (!at || at.col === null) { this.selectValue(null); return; }
    const run = this.runAt(at.col, at.row);
    this.selectValue(run ? run[2] : null);
  };

  // The physical intervals of one value: which registers hold it, from where to where.
  Pane.prototype.intervals = function (v) {
    const fn = this.fn, spans = new Map();
    for (let c = 0; c < fn.runs.length; c++) {
      const runs = fn.runs[c];
      for (let k = 0; k < runs.length; k += 3) {
        if (runs[k + 2] !== v) continue;
        const key = runs[k] + ":" + runs[k + 1];
        if (!spans.has(key)) spans.set(key, []);
        spans.get(key).push(c);
      }
    }
    const out = [];
    for (const [key, cols] of spans) {
      const [start, len] = key.split(":").map(Number);
      // Consecutive columns of one file are one tuple: $vgpr4_vgpr5.
      let group = [cols[0]];
      const flush = () => {
        const names = group.map((c) => fn.cols[c]);
        out.push({ start, len, col: group[0], name: names.length > 1 ? names[0] + "\u2026" + names[names.length - 1] : names[0] });
      };
      for (let i = 1; i < cols.length; i++) {
        if (cols[i] === cols[i - 1] + 1 && fn.files[cols[i]] === fn.files[cols[i - 1]]) group.push(cols[i]);
        else { flush(); group = [cols[i]]; }
      }
      flush();
    }
    out.sort((a, b) => a.start - b.start || a.col - b.col);
    return out;
  };

  Pane.prototype.selectValue = function (v) {
    this.selectedValue = v;
    this.selection.textContent = "";
    if (v !== null) {
      const fn = this.fn;
      const head = el("div", null, fn.values[v][0] + (fn.values[v][1] ? " (" + fn.values[v][1] + ")" : "") + " lives in:");
      const ul = el("ul");
      for (const iv of this.intervals(v)) {
        const li = el("li", null, "$" + iv.name + "  " + lineRange(fn, iv.start, iv.len));
        li.addEventListener("click", () => this.scrollToPoint(iv.start, iv.col));
        ul.append(li);
      }
      this.selection.append(head, ul);
    }
    this.draw();
  };

  Pane.prototype.findValue = function (text) {
    const fn = this.fn;
    const v = fn.values.findIndex((x) => x[0] === text || x[0] === "%" + text);
    if (v < 0) { this.selection.textContent = "no value named " + text; return; }
    this.selectValue(v);
    const iv = this.intervals(v);
    if (iv.length) this.scrollToPoint(iv[0].start, iv[0].col);
  };

  Pane.prototype.scrollToPoint = function (p, col) {
    const wrap = this.wrap;
    wrap.scrollTop = Math.max(0, p * ROW - (wrap.clientHeight - HEAD) / 2);
    if (col !== null && col !== undefined) {
      const x = GUTTER + this.colX[col];
      if (x - wrap.scrollLeft < GUTTER || x - wrap.scrollLeft > wrap.clientWidth - 40) {
        wrap.scrollLeft = Math.max(0, x - GUTTER - wrap.clientWidth / 3);
      }
    }
    this.draw();
  };

  Pane.prototype.focusFinding = function (i) {
    const f = this.fn.findings[i];
    this.activeFinding = i;
    this.findingItems.forEach((li, k) => li.classList.toggle("active", k === i));
    this.root.dataset.activeFinding = String(i);
    const p = f.writer !== null && f.writer !== undefined ? f.writer : f.point;
    if (p !== null && p !== undefined) {
      this.wrap.scrollIntoView({ block: "nearest" });
      this.scrollToPoint(p, f.cols.length ? f.cols[0] : null);
    } else {
      this.draw();
    }
  };

  // Compare: keep the other allocation of the same function at the same block.
  Pane.prototype.onScroll = function () {
    if (this.syncing || !this.partner || !this.link || !this.link.checked) return;
    const top = Math.min(this.P - 1, Math.max(0, Math.floor(this.wrap.scrollTop / ROW)));
    const k = this.blockOf[top], off = top - this.fn.blocks[k][1];
    const other = this.partner;
    if (k >= other.fn.blocks.length) return;
    const start = other.fn.blocks[k][1];
    const end = k + 1 < other.fn.blocks.length ? other.fn.blocks[k + 1][1] : other.P;
    const target = Math.min(end - 1, start + off);
    other.syncing = true;
    other.wrap.scrollTop = target * ROW;
    other.draw();
    requestAnimationFrame(() => { other.syncing = false; });
  };

  // A test and debugging hook: where a cell is drawn, in page coordinates (after scrolling).
  Pane.prototype.locate = function (p, col) {
    const rect = this.canvas.getBoundingClientRect();
    return { x: rect.left + this.colXs(col) + this.colW / 2, y: rect.top + this.rowY(p) + ROW / 2,
      visible: this.rowY(p) >= HEAD && this.rowY(p) + ROW <= this.H };
  };

  // ------------------------------------------------------------------------------------
  // The page
  // ------------------------------------------------------------------------------------
  function build() {
    const header = el("header", "top");
    header.append(el("h1", null, DATA.title));
    for (const side of DATA.sides) {
      const d = el("div", "files");
      d.append(badge(side.verdict), " ", el("span", null, side.file + (side.pre ? "  (virtual program: " + side.pre + ")" : "  (no virtual program: --pre not given)")));
      header.append(d);
    }
    header.append(el("div", "files", DATA.tool));
    app.append(header);
    const names = [];
    DATA.sides.forEach((side) => side.functions.forEach((f) => { if (!names.includes(f.name)) names.push(f.name); }));
    names.forEach((name, fi) => {
      const section = el("section", "fn");
      section.id = "function-" + fi;
      section.append(el("h2", null, name));
      const sides = el("div", "sides");
      section.append(sides);
      app.append(section);
      const here = [];
      DATA.sides.forEach((side, si) => {
        const fn = side.functions.find((f) => f.name === name);
        if (!fn) { sides.append(el("div", "pane", "not in " + side.file)); return; }
        const pane = new Pane(fn, si, fi);
        pane.build(sides);
        panes.push(pane);
        here.push(pane);
      });
      if (here.length === 2) {
        const link = el("label", "controls");
        const box = el("input");
        box.type = "checkbox";
        box.checked = true;
        link.append(box, " scroll both allocations together (by block)");
        section.insertBefore(link, sides);
        here[0].partner = here[1];
        here[1].partner = here[0];
        here[0].link = here[1].link = box;
      }
    });
    for (const pane of panes) pane.fitZoom();
    for (const pane of panes) pane.resize();
    window.addEventListener("resize", () => { for (const pane of panes) pane.resize(); });
    window.verilocc = { panes: panes, data: DATA };
    window.veriloccReady = performance.now();
    document.body.dataset.ready = "1";
    requestAnimationFrame(() => requestAnimationFrame(() => { window.veriloccPainted = performance.now(); }));
  }

  build();
})();
