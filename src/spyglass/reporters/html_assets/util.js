/* spyglass HTML report: formatting and DOM helpers.
 *
 * The renderer concatenates util.js, tables.js, memory.js, flame.js and report.js inside one
 * function, so they share this scope and define no globals. Data from the profile only ever
 * reaches the page through textContent, text nodes and setAttribute on harmless attributes
 * (title, aria-label, data-*): it is never parsed as markup and never used as a URL. */

const KINDS = [
  { key: "python", field: "cpu_python_s", label: "Python", title: "the interpreter running Python code" },
  { key: "native", field: "cpu_native_s", label: "native", title: "C extensions and libraries" },
  { key: "system", field: "cpu_system_s", label: "system", title: "the kernel working for the process" },
];
const ROUGH = "~";

/* Columns that appear only when some row of a table carries their field. GPU figures
 * planned for a later profile version plug in here (and in the header's KPIs); memory
 * figures (schema version 2) have their own columns, see memory.js. */
const OPTIONAL_FIELDS = [
  { field: "gpu_s", label: "GPU", title: "GPU time", format: (v) => fmtSeconds(v) },
  { field: "gpu_mem_peak_bytes", label: "GPU mem", title: "peak GPU memory", format: (v) => fmtBytes(v) },
];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const name of Object.keys(attrs)) {
      const value = attrs[name];
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = String(value);
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  return append(node, ...children);
}

function append(node, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false || child === "") continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function num(value) {
  const n = Number(value);
  return Number.isFinite(n) ? n : 0;
}

function cpuOf(t) {
  return num(t.cpu_python_s) + num(t.cpu_native_s) + num(t.cpu_system_s);
}

function percentOf(part, whole) {
  return whole > 0 ? (100 * part) / whole : 0;
}

/* Same rules as the terminal report: empty for zero, at most 5 characters. */
function fmtPercent(value) {
  if (!(value > 0)) return "";
  if (value < 0.1) return "<0.1%";
  if (value >= 99.95) return "100%";
  return value.toFixed(1) + "%";
}

function fmtSeconds(value, space) {
  const unit = space ? " s" : "s";
  if (!(value > 0)) return "";
  if (value < 0.005) return "<0.01" + unit;
  if (value < 9.995) return value.toFixed(2) + unit;
  if (value < 99.95) return value.toFixed(1) + unit;
  return value.toFixed(0) + unit;
}

function fmtCount(value) {
  return String(Math.round(num(value))).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function fmtBytes(value) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = num(value);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return v > 0 ? (i === 0 ? String(v) : v.toFixed(v < 10 ? 2 : 1)) + " " + units[i] : "";
}

/* The uncertainty of a figure resting on `samples` samples: value / sqrt(samples). */
function plusMinus(value, samples) {
  return samples > 0 ? value / Math.sqrt(samples) : value;
}

function isRough(t, minSamples) {
  return num(t.samples) < minSamples;
}

/* A figure cell's content: the text, marked "~" with a ± title when rough. */
function figure(text, opts) {
  if (!text) return "";
  if (!opts || !opts.rough || text.startsWith("<")) return text;
  const n = num(opts.samples);
  const spread = opts.unit === "%"
    ? plusMinus(opts.value, n).toFixed(1) + "%"
    : fmtSeconds(plusMinus(opts.value, n)) || "<0.01s";
  const why = n === 1 ? "1 sample" : fmtCount(n) + " samples";
  return el("span", { class: "rough", title: "rough: " + why + ", ±" + spread }, ROUGH + text);
}

function shortPath(path) {
  const cut = path.lastIndexOf("/");
  return cut >= 0 && cut < path.length - 1 ? path.slice(cut + 1) : path;
}

/* A path as a muted directory and a bold file name. */
function pathParts(path, cls) {
  const cut = path.lastIndexOf("/");
  const dir = cut >= 0 && cut < path.length - 1 ? path.slice(0, cut + 1) : "";
  const dirNode = el("span", { class: "dir" });
  // Let long paths wrap after a slash rather than anywhere.
  dir.split("/").forEach((part, i, all) => {
    if (i < all.length - 1) append(dirNode, part + "/", el("wbr"));
  });
  return el("span", { class: cls || null }, dirNode, el("span", { class: "base", text: dir ? path.slice(cut + 1) : path }));
}

/* A stacked bar of Python / native / system time: `fill` (0..1) of the track is coloured. */
function cpuBar(t, fill, small) {
  const total = cpuOf(t);
  const inner = el("div", { class: "fill" });
  inner.style.width = Math.max(0, Math.min(1, fill)) * 100 + "%";
  for (const k of KINDS) {
    const v = num(t[k.field]);
    if (v <= 0 || total <= 0) continue;
    const seg = el("span", { class: "k-" + k.key });
    seg.style.width = (100 * v) / total + "%";
    inner.appendChild(seg);
  }
  const title = KINDS.map((k) => k.label + " " + (fmtSeconds(num(t[k.field]), true) || "0 s")).join(" · ");
  return el("div", { class: small ? "tbar small" : "tbar", title: title, "aria-hidden": "true" }, total > 0 ? inner : null);
}

function swatch(key) {
  return el("span", { class: "swatch k-" + key, "aria-hidden": "true" });
}

function dedent(sources) {
  const expanded = sources.map((s) => expandTabs(String(s)).replace(/\s+$/, ""));
  let cut = Infinity;
  for (const s of expanded) {
    if (s.trim()) cut = Math.min(cut, s.length - s.replace(/^ +/, "").length);
  }
  return expanded.map((s) => (cut === Infinity ? s : s.slice(cut)));
}

function expandTabs(s) {
  if (s.indexOf("\t") < 0) return s;
  let out = "";
  for (const ch of s) out += ch === "\t" ? " ".repeat(4 - (out.length % 4)) : ch;
  return out;
}

function optionalColumns(rows) {
  return OPTIONAL_FIELDS.filter((c) => rows.some((r) => typeof r[c.field] === "number"));
}
