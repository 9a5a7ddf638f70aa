/* spyglass HTML report: memory and copy figures (profiles with memory_profiled true).
 *
 * Uses util.js (el, num, fmtPercent…) and tables.js (sortableTable). Charts are SVG built
 * with createElementNS and attributes only: nothing from the profile becomes markup, and
 * no inline style attribute is written (the page's Content-Security-Policy forbids them). */

const SVG_NS = "http://www.w3.org/2000/svg";
const SPARK_W = 64;
const SPARK_H = 18;
const CHART_W = 1000;
const CHART_H = 160;

/* The profile's MB (2^20 bytes) as the terminal report writes them, in MB of 10^6 bytes:
 * "0.4 MB", "12.0 MB", "318 MB", "1.2 GB". */
const PROFILE_MB_IN_MB = 1.048576;

function fmtMB(value) {
  const v = num(value) * PROFILE_MB_IN_MB;
  if (!(v > 0)) return "";
  if (v < 0.05) return "<0.1 MB";
  if (v < 99.95) return v.toFixed(1) + " MB";
  if (v < 999.5) return v.toFixed(0) + " MB";
  return (v / 1000).toFixed(1) + " GB";
}

function fmtRate(value) {
  const text = fmtMB(value);
  return text ? text + "/s" : "";
}

function fmtPy(fraction) {
  return Math.round(100 * Math.min(1, Math.max(0, num(fraction)))) + "% py";
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const name of Object.keys(attrs || {})) node.setAttribute(name, String(attrs[name]));
  for (const child of children) if (child) node.appendChild(child);
  return node;
}

function svgTitle(text) {
  const t = document.createElementNS(SVG_NS, "title");
  t.textContent = text;
  return t;
}

/* [t, mb] points, cleaned: finite numbers, sorted by time. */
function timelineOf(points) {
  if (!Array.isArray(points)) return [];
  return points
    .filter((p) => Array.isArray(p) && p.length === 2 && Number.isFinite(Number(p[0])) && Number.isFinite(Number(p[1])))
    .map((p) => [Number(p[0]), Number(p[1])])
    .sort((a, b) => a[0] - b[0]);
}

/* The path of a step function (0 before the first point, each point held until the next)
 * over [0, end] in a w × h box, scaled so that `top` MB reaches the top edge. */
function stepPath(points, end, top, w, h) {
  const lo = Math.min(0, ...points.map((p) => p[1]));
  const span = top - lo > 0 ? top - lo : 1;
  const x = (t) => ((end > 0 ? Math.min(Math.max(t, 0), end) / end : 0) * w).toFixed(2);
  const y = (v) => (h - ((v - lo) / span) * h).toFixed(2);
  let d = "M0," + y(0);
  let last = 0;
  for (const [t, v] of points) {
    d += "H" + x(t) + "V" + y(v);
    last = v;
  }
  return { line: d + "H" + w, area: d + "H" + w + "V" + y(lo) + "H0Z", last: last, y: y };
}

/* A line's live memory over the run, as a small inline chart. */
function sparkSvg(points, end, label) {
  const tl = timelineOf(points);
  if (!tl.length) return "";
  const stop = Math.max(num(end), tl[tl.length - 1][0]);
  const top = Math.max(...tl.map((p) => p[1]));
  const path = stepPath(tl, stop, top, SPARK_W, SPARK_H - 2);
  const peak = fmtMB(top) || "0 MB";
  return svg(
    "svg",
    { class: "spark", width: SPARK_W, height: SPARK_H, viewBox: "0 -1 " + SPARK_W + " " + SPARK_H, role: "img", "aria-label": label + ": up to " + peak },
    svgTitle(label + " (up to " + peak + ")"),
    svg("path", { class: "spark-area", d: path.area }),
    svg("path", { class: "spark-line", d: path.line }),
  );
}

function lastValue(points) {
  const tl = timelineOf(points);
  return tl.length ? tl[tl.length - 1][1] : null;
}

/* The memory columns of a table: those whose field some row carries.
 * mem: {elapsed: the run's wall time, the right edge of every timeline}. */
function memoryColumns(rows, mem) {
  const has = (field) => rows.some((r) => typeof r[field] === "number");
  const columns = [];
  if (has("mem_alloc_mb")) {
    columns.push({
      key: "mem",
      label: "memory",
      title: "MB allocated (sampled); py = the share allocated through Python's allocator",
      value: (r) => num(r.mem_alloc_mb),
      cell: (r) => {
        if (!(num(r.mem_alloc_mb) > 0)) return "";
        const py = typeof r.mem_python_fraction === "number" ? el("span", { class: "py", text: fmtPy(r.mem_python_fraction) }) : null;
        return el("span", { class: "mem" }, fmtMB(r.mem_alloc_mb), py);
      },
      cls: "num mem-col",
    });
  }
  const peakField = has("mem_peak_mb") ? "mem_peak_mb" : has("max_footprint_mb") ? "max_footprint_mb" : null;
  if (peakField) {
    columns.push({ key: "peak", label: "peak", title: "the most one execution of the line held (MB)", value: (r) => num(r[peakField]), cell: (r) => fmtMB(r[peakField]), cls: "num mem-col" });
  }
  if (rows.some((r) => Array.isArray(r.mem_timeline))) {
    columns.push({
      key: "timeline",
      label: "timeline",
      title: "live MB over the run (sort: MB still live at the end)",
      value: (r) => lastValue(r.mem_timeline),
      cell: (r) => sparkSvg(r.mem_timeline, mem.elapsed, "live memory over the run"),
      cls: "num spark-col",
    });
  }
  if (has("copy_mb_s")) {
    columns.push({ key: "copy", label: "copy", title: "MB copied per second of the run (memcpy, memmove)", value: (r) => num(r.copy_mb_s), cell: (r) => fmtRate(r.copy_mb_s), cls: "num copy-col" });
  } else if (has("copy_mb")) {
    columns.push({ key: "copy", label: "copied", title: "MB copied (memcpy, memmove)", value: (r) => num(r.copy_mb), cell: (r) => fmtMB(r.copy_mb), cls: "num copy-col" });
  }
  return columns;
}

/* Where a line is: "file.py:12", linked to its row when the report shows the file. */
function lineRef(path, lineno, anchorOf) {
  const text = shortPath(String(path)) + (lineno === null || lineno === undefined ? "" : ":" + lineno);
  const anchor = anchorOf(path);
  const title = String(path) + (lineno === null || lineno === undefined ? "" : ":" + lineno);
  return anchor ? el("a", { href: "#" + anchor + "-L" + lineno, class: "mono", title: title }, text) : el("span", { class: "mono", title: title }, text);
}

/* The footprint over the run, as a line chart with the maximum marked. */
function footprintChart(profile, where) {
  const tl = timelineOf(profile.footprint_timeline);
  const elapsed = Math.max(num(profile.elapsed_s), tl.length ? tl[tl.length - 1][0] : 0);
  const maxMB = Math.max(num(profile.max_footprint_mb), ...tl.map((p) => p[1]), 0);
  const figure = el("figure", { class: "fp", "data-chart": "footprint" });
  if (!tl.length) {
    figure.appendChild(el("p", { class: "note", text: "No footprint timeline was recorded." }));
    return figure;
  }
  const path = stepPath(tl, elapsed, maxMB, CHART_W, CHART_H);
  const peak = tl.reduce((best, p) => (p[1] > best[1] ? p : best), tl[0]);
  const px = ((elapsed > 0 ? peak[0] / elapsed : 0) * CHART_W).toFixed(2);
  const label = "memory footprint over the run, up to " + (fmtMB(maxMB) || "0 MB");
  const chart = svg(
    "svg",
    { class: "fp-svg", viewBox: "0 0 " + CHART_W + " " + CHART_H, preserveAspectRatio: "none", role: "img", "aria-label": label },
    svgTitle(label),
    svg("line", { class: "fp-grid", x1: 0, x2: CHART_W, y1: path.y(maxMB / 2), y2: path.y(maxMB / 2) }),
    svg("path", { class: "fp-area", d: path.area }),
    svg("path", { class: "fp-line", d: path.line }),
    svg("line", { class: "fp-max", x1: px, x2: px, y1: 0, y2: CHART_H }),
  );
  append(
    figure,
    el("div", { class: "fp-y", "aria-hidden": "true" }, el("span", { text: fmtMB(maxMB) || "0 MB" }), el("span", { text: fmtMB(maxMB / 2) }), el("span", { text: "0" })),
    el("div", { class: "fp-plot" }, chart),
    el("div", { class: "fp-x", "aria-hidden": "true" }, el("span", { text: "0 s" }), el("span", { text: "max at " + fmtSeconds(peak[0], true) }), el("span", { text: fmtSeconds(elapsed, true) || "0 s" })),
    el("figcaption", null, "Memory footprint over the run (sum of the sampled net allocations); max " + (fmtMB(maxMB) || "0 MB"), where ? [" at ", where] : null, "."),
  );
  return figure;
}

/* The memory part of the totals card: key figures and the footprint chart. */
function memorySection(profile, anchorOf) {
  const kpi = (label, value, unit, title) =>
    el("div", { class: "kpi mem", title: title || null }, el("div", { class: "label", text: label }), el("div", { class: "value" }, value, unit ? el("small", { text: unit }) : null));
  const where = profile.max_footprint_file ? lineRef(profile.max_footprint_file, profile.max_footprint_lineno, anchorOf) : null;
  const native = num(profile.native_thread_alloc_mb);
  const kpis = el(
    "div",
    { class: "kpis", "data-kpis": "memory" },
    kpi("max footprint", fmtMB(profile.max_footprint_mb) || "0 MB", "", "the largest sampled footprint of the run"),
    kpi("allocated", fmtMB(profile.mem_alloc_mb) || "0 MB", fmtPy(profile.mem_python_fraction), "MB allocated (sampled); py = through Python's allocator"),
    kpi("copy", fmtRate(profile.copy_mb_s) || "0 MB/s", fmtMB(profile.copy_mb), "MB copied (memcpy, memmove) per second, and in all"),
    native > 0 ? kpi("native threads", fmtMB(native), "", "allocated by threads without a Python frame") : null,
  );
  return [el("h3", { text: "Memory" }), kpis, footprintChart(profile, where)];
}

/* Every possible leak of the run, most likely first. */
function leaksCard(profile, anchorOf) {
  const rows = [];
  for (const path of Object.keys(profile.files)) {
    const file = profile.files[path];
    const lines = new Map((file.lines || []).map((l) => [l.lineno, l]));
    for (const leak of Array.isArray(file.leaks) ? file.leaks : []) {
      const line = lines.get(leak.lineno) || {};
      rows.push({ path: path, lineno: leak.lineno, likelihood: num(leak.likelihood), rate: num(leak.rate_mb_s), alloc: line.mem_alloc_mb, source: String(line.source || "").trim() });
    }
  }
  const columns = [
    { key: "where", label: "line", text: true, value: (r) => shortPath(r.path) + ":" + String(r.lineno).padStart(8, "0"), cell: (r) => lineRef(r.path, r.lineno, anchorOf), cls: "text" },
    { key: "likelihood", label: "likelihood", title: "how likely the line's memory is never freed", value: (r) => r.likelihood, cell: (r) => fmtPercent(100 * r.likelihood) || "0%", cls: "num leak" },
    { key: "rate", label: "growth", title: "how fast it grows, MB/s", value: (r) => r.rate, cell: (r) => fmtRate(r.rate), cls: "num" },
    { key: "alloc", label: "allocated", title: "MB the line allocated in all", value: (r) => num(r.alloc), cell: (r) => fmtMB(r.alloc), cls: "num" },
    { key: "source", label: "source", text: true, grow: true, value: (r) => r.source, cell: (r) => r.source || el("span", { class: "na", text: "(source not available)" }), cls: "src" },
  ];
  const table = sortableTable(columns, rows, { name: "leaks", caption: "Possible leaks", sort: { key: "likelihood", dir: "descending" }, empty: "No line looks like a leak." });
  return el(
    "section",
    { class: "card", id: "leaks", "aria-labelledby": "leaks-h" },
    el("div", { class: "card-head" }, el("h2", { id: "leaks-h", text: "Possible leaks" }), el("span", { class: "sub", text: "lines whose memory kept growing and was rarely freed" })),
    table.node,
  );
}

function hasMemory(l) {
  return num(l.mem_alloc_mb) > 0 || num(l.copy_mb) > 0;
}
