/* spyglass HTML report: native functions. Under a line's source, the native functions that
 * took its native time (the top few, every one in the tooltip); and a card of the run's
 * native functions with their self time and the lines that led there. */

const NATIVE_PER_LINE = 3; // named under a line's source
const TOP_NATIVE = 25; // rows of the native functions card
const NATIVE_MIN_SHARE = 5; // % of a line's native time for a function to be named under it

function nativeList(r) {
  return Array.isArray(r && r.native_functions) ? r.native_functions : [];
}

/* "libpython3.11.so.1.0" -> "libpython3.11", "_zlib.cpython-311-x86_64-linux-gnu.so" -> "_zlib". */
function shortLibrary(lib) {
  let name = String(lib || "");
  for (const cut of [".cpython-", ".so"]) {
    const at = name.indexOf(cut);
    if (at > 0) name = name.slice(0, at);
  }
  return name;
}

/* The line's native functions as a small row under its source, or null. */
function nativeUnder(r) {
  const native = num(r.cpu_native_s);
  const list = nativeList(r);
  if (!list.length || native <= 0) return null;
  const share = (f) => (100 * num(f.cpu_s)) / native;
  const shown = list.filter((f) => share(f) >= NATIVE_MIN_SHARE).slice(0, NATIVE_PER_LINE);
  if (!shown.length) return null;
  const title = list.map((f) => Math.round(share(f)) + "% " + f.name + " (" + (f.library || "?") + ")").join("\n");
  const row = el("div", { class: "native-under", title: "native time by native function:\n" + title });
  row.appendChild(el("span", { class: "dim", text: "\u21b3 native: " }));
  shown.forEach((f, i) => {
    if (i) row.appendChild(el("span", { class: "dim", text: " \u00b7 " }));
    append(row, el("span", { class: "mono native-name", text: String(f.name) }), el("span", { class: "dim", text: " " + Math.round(share(f)) + "% " + shortLibrary(f.library) }));
  });
  if (list.length > shown.length) row.appendChild(el("span", { class: "dim", text: " \u00b7 +" + (list.length - shown.length) + " more" }));
  return row;
}

/* The run's native functions: self time, library, the lines that led there. */
function nativeFunctionsCard(profile, ctx) {
  const all = Array.isArray(profile.native_functions) ? profile.native_functions : [];
  if (!all.length) return null;
  const rows = all.slice(0, TOP_NATIVE);
  const where = (l) => shortPath(String(l.file)) + ":" + l.lineno;
  const columns = [
    { key: "name", label: "native function", text: true, grow: true, value: (f) => String(f.name), cell: (f) => el("span", { class: "mono brk" }, String(f.name)), cls: "text brk" },
    { key: "library", label: "library", text: true, value: (f) => String(f.library), cell: (f) => el("span", { class: "mono", title: String(f.library) }, shortLibrary(f.library)), cls: "text" },
    {
      key: "cpu",
      label: "self CPU",
      title: "CPU time the samples found in this function, as a share of all CPU time",
      value: (f) => num(f.cpu_s),
      cell: (f) => figure(fmtPercent(percentOf(num(f.cpu_s), ctx.total)), { rough: isRough(f, ctx.minSamples), samples: f.samples, value: percentOf(num(f.cpu_s), ctx.total), unit: "%" }),
      cls: "num native",
    },
    { key: "samples", label: "samples", value: (f) => num(f.samples), cell: (f) => fmtCount(f.samples), cls: "num dim" },
    {
      key: "lines",
      label: "lines that led there",
      text: true,
      sortable: false,
      value: () => null,
      cell: (f) => {
        const lines = Array.isArray(f.lines) ? f.lines : [];
        if (!lines.length) return el("span", { class: "na", text: "(no profiled line)" });
        const box = el("span", { class: "mono" });
        lines.slice(0, 3).forEach((l, i) => {
          if (i) box.appendChild(document.createTextNode(", "));
          const anchor = ctx.anchorOf(String(l.file));
          const text = where(l);
          box.appendChild(anchor ? el("a", { href: "#" + anchor + "-L" + l.lineno, title: l.file + ":" + l.lineno }, text) : el("span", { text: text }));
        });
        if (lines.length > 3) box.appendChild(document.createTextNode(" +" + (lines.length - 3)));
        return box;
      },
      cls: "text",
    },
  ];
  const table = sortableTable(columns, rows, { name: "native-functions", caption: "Native functions", sort: { key: "cpu", dir: "descending" } });
  const sub = all.length > rows.length ? "the " + rows.length + " costliest of " + all.length : "self time, and the lines that led there";
  return el("section", { class: "card", id: "native", "aria-labelledby": "native-h" }, el("div", { class: "card-head" }, el("h2", { id: "native-h", text: "Native functions" }), el("span", { class: "sub", text: sub })), table.node);
}
