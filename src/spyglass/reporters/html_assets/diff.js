/* spyglass diff page: what got faster or slower between two profiles, beyond the noise.
 *
 * The renderer (spyglass.reporters.diff_html) concatenates util.js, tables.js and this file
 * inside one function; this file uses their el, append, num, fmtCount, shortPath and
 * sortableTable. The diff document (spyglass.diffing.diff_to_json) comes from the
 * "diff-data" island, and every string in it reaches the page as text only. */

const SIGMA = "σ";
const TO = " → ";
const MINUS = "−";
const LINE_KINDS = ["lines", "functions"];
const VERDICTS = ["slower", "faster", "noise"];
const MATCHES = new Map([
  ["moved", "matched by its function and text at another line number"],
  ["edited", "its text changed: matched by line number only"],
  ["new", "not in the before profile"],
  ["gone", "not in the after profile"],
]);

function missing(value) {
  return value === null || value === undefined;
}

/* Seconds: three decimals below 1 s, fewer above; signed: with + or − in front. */
function secs(value, signed) {
  const v = num(value);
  const a = Math.abs(v);
  if (a < 0.0005) return "0 s";
  const digits = a >= 99.5 ? 0 : a >= 9.95 ? 1 : a >= 0.995 ? 2 : 3;
  const sign = v < 0 ? MINUS : signed ? "+" : "";
  return sign + a.toFixed(digits) + " s";
}

/* MB with one decimal (none from 100 MB on); signed: with + or − in front. */
function megabytes(value, signed) {
  const v = num(value) * 1.048576; // the profile's MB are 2^20 bytes; shown: 10^6 bytes
  const a = Math.abs(v);
  if (a < 0.05) return "0 MB";
  const sign = v < 0 ? MINUS : signed ? "+" : "";
  return sign + a.toFixed(a >= 99.95 ? 0 : 1) + " MB";
}

/* The change in standard deviations of its noise, or null when it has no noise. */
function sigmas(c) {
  const s = num(c.sigma_s);
  return s > 0 ? num(c.delta_s) / s : null;
}

function fmtSigmas(c) {
  const r = sigmas(c);
  if (r === null) return "";
  const a = Math.abs(r);
  if (a < 0.05) return "0" + SIGMA;
  return (r < 0 ? MINUS : "+") + (a >= 99.5 ? a.toFixed(0) : a.toFixed(1)) + SIGMA;
}

/* "slower", "faster" or "noise", by the rule of spyglass.diffing.Change.verdict. */
function verdictOf(c) {
  if (!c.flagged) return "noise";
  return num(c.delta_s) > 0 ? "slower" : "faster";
}

function linenoOf(c) {
  return missing(c.after_lineno) ? c.before_lineno : c.after_lineno;
}

function whereText(c) {
  const b = c.before_lineno;
  const a = c.after_lineno;
  const base = shortPath(String(c.file));
  if (!missing(a) && !missing(b) && a !== b) return base + ":" + b + "→" + a;
  return base + ":" + (missing(linenoOf(c)) ? "?" : linenoOf(c));
}

function whereCell(c) {
  const how = String(c.match);
  const tag = MATCHES.has(how) ? el("span", { class: "tag", title: how + ": " + MATCHES.get(how), text: how }) : null;
  return [el("span", { class: "mono", title: String(c.file) + ":" + linenoOf(c), text: whereText(c) }), tag];
}

/* The columns of a table of changes; kind: "lines" or "functions"; k: the threshold;
 * mem: whether both profiles had memory figures (a column of allocation changes). */
function changeColumns(kind, k, mem) {
  const columns = [];
  if (kind === "functions") {
    columns.push({ key: "function", label: "function", text: true, grow: true, value: (c) => String(c.name), cell: (c) => String(c.name), cls: "text mono" });
  }
  columns.push({
    key: "where",
    label: kind === "lines" ? "line" : "file",
    title: kind === "lines" ? "file:line (before→after when it moved)" : "file:first line of the function",
    text: true,
    value: (c) => shortPath(String(c.file)) + ":" + String(num(linenoOf(c))).padStart(9, "0") + ":" + String(c.file),
    cell: whereCell,
    cls: "text",
  });
  if (kind === "lines") {
    columns.push({
      key: "source",
      label: "source",
      text: true,
      grow: true,
      value: (c) => String(c.source || ""),
      cell: (c) => (c.source ? String(c.source) : el("span", { class: "na", text: "(source not available)" })),
      cls: "src",
    });
  }
  const noise = (c) => "within the noise: ±" + secs(k * num(c.sigma_s)) + " (" + k + SIGMA + ")";
  columns.push(
    { key: "before", label: "before", title: "CPU seconds in the before profile", value: (c) => num(c.before_s), cell: (c) => secs(c.before_s), cls: "num" },
    { key: "after", label: "after", title: "CPU seconds in the after profile", value: (c) => num(c.after_s), cell: (c) => secs(c.after_s), cls: "num" },
    {
      key: "delta",
      label: "Δ",
      title: "the change: after − before, in CPU seconds",
      value: (c) => num(c.delta_s),
      cell: (c) => el("span", { class: verdictOf(c) === "noise" ? null : verdictOf(c), title: noise(c) }, secs(c.delta_s, true)),
      cls: "num delta",
    },
    {
      key: "sigmas",
      label: "Δ/" + SIGMA,
      title: "the change in standard deviations of its noise (flagged beyond " + k + SIGMA + ")",
      value: sigmas,
      cell: fmtSigmas,
      cls: "num",
    },
    {
      key: "samples",
      label: "samples",
      title: "CPU samples behind the figures, before → after",
      value: (c) => num(c.before_samples) + num(c.after_samples),
      cell: (c) => fmtCount(c.before_samples) + TO + fmtCount(c.after_samples),
      cls: "num dim",
    },
  );
  if (mem) {
    columns.push({
      key: "mem",
      label: "Δ memory",
      title: "MB allocated: after − before (sampled; not judged against noise)",
      value: (c) => (typeof c.mem_delta_mb === "number" ? c.mem_delta_mb : null),
      cell: (c) => (typeof c.mem_delta_mb === "number" ? el("span", { title: megabytes(c.before_mem_mb) + TO + megabytes(c.after_mem_mb) }, megabytes(c.mem_delta_mb, true)) : ""),
      cls: "num mem-delta",
    });
  }
  return columns;
}

function changeTable(kind, rows, k, name, caption, sort, empty, mem) {
  return sortableTable(changeColumns(kind, k, mem), rows, {
    name: name,
    caption: caption,
    sort: sort,
    empty: empty,
    rowAttrs: (c) => ({ "data-file": String(c.file), "data-line": missing(linenoOf(c)) ? null : String(linenoOf(c)) }),
  });
}

function plural(n, word) {
  return n + " " + word + (n === 1 ? "" : "s");
}

function counts(group) {
  return plural(group.lines.length, "line") + ", " + plural(group.functions.length, "function");
}

function changesCard(id, title, verdict, group, k, sort, mem) {
  const what = verdict === "slower" ? "got slower" : "got faster";
  const card = el(
    "section",
    { class: "card changes", id: id, "aria-labelledby": id + "-h", "data-verdict": verdict },
    el("div", { class: "card-head" }, el("h2", { id: id + "-h", class: verdict, text: title }), el("span", { class: "sub", text: counts(group) + " " + what + " beyond " + k + SIGMA })),
  );
  for (const kind of LINE_KINDS) {
    const word = kind === "lines" ? "line" : "function";
    const table = changeTable(kind, group[kind], k, verdict + "-" + kind, title + ": " + kind, sort, "No " + word + " " + what + " beyond the noise.", mem);
    card.append(el("h3", { text: kind === "lines" ? "Lines" : "Functions" }), table.node);
  }
  return card;
}

/* The unflagged changes, in a section that starts collapsed. */
function noiseCard(group, k, mem) {
  const details = el(
    "details",
    { class: "card noise", id: "noise", "data-verdict": "noise" },
    el("summary", null, el("h2", { id: "noise-h", text: "Within the noise" }), el("span", { class: "sub", text: counts(group) + " within " + k + SIGMA })),
  );
  for (const kind of LINE_KINDS) {
    const word = kind === "lines" ? "line" : "function";
    const table = changeTable(kind, group[kind], k, "noise-" + kind, "Within the noise: " + kind, { key: "delta", dir: "descending" }, "No " + word + " within the noise.", mem);
    details.append(el("h3", { text: kind === "lines" ? "Lines" : "Functions" }), table.node);
  }
  return details;
}

function startedText(side) {
  const started = num(side.started_at);
  return started > 0 ? new Date(started * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC" : "";
}

function sideBlock(label, side) {
  const rows = [
    ["program", String(side.program || "")],
    ["profile", missing(side.file) ? "" : String(side.file)],
    ["CPU", secs(side.cpu_s)],
    ["wait", secs(side.wait_s)],
    ["elapsed", secs(side.elapsed_s)],
    ["samples", fmtCount(side.samples)],
    ["started", startedText(side)],
  ];
  const dl = el("dl");
  for (const [term, value] of rows) {
    if (value) dl.append(el("dt", { text: term }), el("dd", { class: term === "program" || term === "profile" ? "mono" : null, text: value }));
  }
  return el("div", { class: "side", "data-side": label.toLowerCase() }, el("h3", { text: label }), dl);
}

function kpi(label, value, cls, title) {
  return el("div", { class: "kpi", title: title || null }, el("div", { class: "label", text: label }), el("div", { class: "value" + (cls ? " " + cls : "") }, value));
}

function totalsCard(diff, k) {
  const t = diff.total || {};
  const v = verdictOf(t);
  const before = num(t.before_s);
  const pct = before > 0 ? (100 * num(t.delta_s)) / before : null;
  const change = [secs(t.delta_s, true), pct === null ? null : el("span", { class: "pct", text: "(" + (pct < 0 ? MINUS : "+") + Math.abs(pct).toFixed(1) + "%)" })];
  const kpis = el(
    "div",
    { class: "kpis" },
    kpi("CPU before", secs(t.before_s), "", "CPU time of the whole before run"),
    kpi("CPU after", secs(t.after_s), "", "CPU time of the whole after run"),
    kpi("change", change, v === "noise" ? "" : v, v === "noise" ? "within the noise" : "beyond the noise: " + v),
    kpi("noise", ["±" + secs(k * num(t.sigma_s)), el("span", { class: "pct", text: "at " + k + SIGMA })], "", "changes of the total smaller than this are noise"),
    typeof t.mem_delta_mb === "number" ? kpi("memory", [megabytes(t.mem_delta_mb, true), el("span", { class: "pct", text: megabytes(t.before_mem_mb) + TO + megabytes(t.after_mem_mb) })], "", "MB allocated by the whole run: after − before") : null,
  );
  const sides = el("div", { class: "sides" }, sideBlock("Before", diff.before || {}), sideBlock("After", diff.after || {}));
  let rule = "A change is flagged when |Δ| > " + k + SIGMA + ", where " + SIGMA + " = √(" + SIGMA + "_before² + " + SIGMA + "_after²) and each " + SIGMA + " = time / √samples";
  if (typeof diff.tested === "number" && typeof diff.fdr === "number") {
    rule += ", and when it passes the Benjamini–Hochberg procedure over the " + diff.tested + " lines and functions tested, which keeps the expected share of noise among the flagged changes under " + Number((100 * diff.fdr).toPrecision(3)) + "%";
  }
  rule += ". Only CPU time is compared; wait is shown for information.";
  return el("section", { class: "card", id: "totals", "aria-labelledby": "totals-h" }, el("div", { class: "card-head" }, el("h2", { id: "totals-h", text: "Run totals" }), el("span", { class: "sub", text: v === "noise" ? "the total changed within the noise" : "the whole run got " + v })), kpis, sides, el("p", { class: "note", text: rule }));
}

function pageHeader(diff, k) {
  const b = diff.before || {};
  const a = diff.after || {};
  const bp = String(b.program || "");
  const ap = String(a.program || "");
  const title = bp === ap ? ap : bp + TO + ap;
  const facts = [
    missing(b.file) ? "" : "before: " + String(b.file),
    missing(a.file) ? "" : "after: " + String(a.file),
    "noise threshold " + k + SIGMA,
  ];
  return el(
    "header",
    { class: "top" },
    el(
      "div",
      { class: "wrap" },
      el("div", { class: "brand" }, el("span", { class: "brand-mark", "aria-hidden": "true" }), "spyglass diff"),
      el("h1", { text: title, title: title }),
      el("p", { class: "facts" }, facts.filter(Boolean).map((f) => el("span", { text: f }))),
    ),
  );
}

function pageFooter(diff) {
  const versions = ["before", "after"].map((s) => (diff[s] && diff[s].spyglass_version ? s + ": spyglass " + String(diff[s].spyglass_version) : "")).filter(Boolean);
  const notes = [
    "before, after = CPU seconds (Python + native + system); Δ = after − before; Δ/" + SIGMA + " = the change in standard deviations of its noise.",
    "Lines are matched across edits by their function and text (tags: moved, edited, new, gone).",
    "spyglass diff format " + num(diff.version) + (versions.length ? " · " + versions.join(" · ") : ""),
  ];
  return el("footer", null, notes.map((n) => el("p", { text: n })));
}

function fail(message) {
  const root = document.getElementById("report") || document.body;
  root.replaceChildren(el("div", { class: "fatal", role: "alert" }, el("strong", { text: "This diff cannot be shown. " }), message));
}

function diffPage() {
  let diff;
  try {
    const node = document.getElementById("diff-data");
    diff = node ? JSON.parse(node.textContent) : null;
  } catch (e) {
    fail("Its data could not be read (" + e.message + ").");
    return;
  }
  if (!diff || typeof diff !== "object" || diff.format !== "spyglass-diff" || !Array.isArray(diff.lines) || !Array.isArray(diff.functions)) {
    fail("It holds no spyglass diff.");
    return;
  }
  const k = num(diff.threshold_sigma);
  const groups = {};
  for (const v of VERDICTS) groups[v] = { lines: [], functions: [] };
  for (const kind of LINE_KINDS) {
    for (const c of diff[kind]) {
      if (c && typeof c === "object") groups[verdictOf(c)][kind].push(c);
    }
  }
  const mem = typeof (diff.total || {}).mem_delta_mb === "number";
  const body = el(
    "main",
    { class: "wrap" },
    totalsCard(diff, k),
    changesCard("slower", "Regressions", "slower", groups.slower, k, { key: "delta", dir: "descending" }, mem),
    changesCard("faster", "Improvements", "faster", groups.faster, k, { key: "delta", dir: "ascending" }, mem),
    noiseCard(groups.noise, k, mem),
    pageFooter(diff),
  );
  document.getElementById("report").replaceChildren(pageHeader(diff, k), body);
  document.documentElement.setAttribute("data-ready", "true");
}

diffPage();
