/* spyglass HTML report: sortable tables and the figure columns they share. */

/* Orders numbers numerically and everything else as text; missing values sort last. */
function compareValues(a, b) {
  const aMissing = a === null || a === undefined;
  const bMissing = b === null || b === undefined;
  if (aMissing || bMissing) return aMissing === bMissing ? 0 : aMissing ? 1 : -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b));
}

/* A table whose column headers are buttons that sort it (click again to reverse).
 *
 * columns: [{key, label, title, text (left-aligned), head (node before the label),
 *            value(row) -> sort key, cell(row) -> content, cls, firstDir, sortable}]
 * options: {caption, sort: {key, dir}, gapKey + gap(row) -> line number (an elision row
 *           goes wherever numbers skip while sorted by gapKey), rowAttrs(row), empty,
 *           children(row) -> rows shown under it, sorted alike, while it is expanded} */
function sortableTable(columns, rows, options) {
  const state = { key: options.sort.key, dir: options.sort.dir, rows: rows, open: new Set() };
  const heads = new Map();
  const headRow = el("tr");
  for (const col of columns) {
    const th = el("th", { scope: "col", class: [col.text ? "text" : "", col.grow ? "grow" : ""].join(" ").trim() || null });
    if (col.sortable === false) {
      th.appendChild(el("span", { class: "plain", title: col.title }, col.head || null, col.label));
    } else {
      const label = "sort by " + col.label;
      th.appendChild(
        el("button", { type: "button", class: "sort", title: col.title ? col.title + " (" + label + ")" : label, "data-key": col.key, onclick: () => sortBy(col.key) }, col.head || null, col.label),
      );
    }
    heads.set(col.key, th);
    headRow.appendChild(th);
  }
  const tbody = el("tbody");
  const table = el("table", { "data-table": options.name || null }, options.caption ? el("caption", { class: "vh", text: options.caption }) : null, el("thead", null, headRow), tbody);

  function sortBy(key, dir) {
    const col = columns.find((c) => c.key === key);
    if (!col) return;
    if (!dir) {
      if (state.key === key) dir = state.dir === "ascending" ? "descending" : "ascending";
      else dir = col.firstDir || (col.text ? "ascending" : "descending");
    }
    state.key = key;
    state.dir = dir;
    draw();
  }

  function draw() {
    const col = columns.find((c) => c.key === state.key) || columns[0];
    const sign = state.dir === "ascending" ? 1 : -1;
    const order = state.rows.map((row, i) => ({ row: row, i: i, v: col.value(row) }));
    order.sort((a, b) => sign * compareValues(a.v, b.v) || a.i - b.i);
    for (const [key, th] of heads) {
      if (key === state.key) th.setAttribute("aria-sort", state.dir);
      else th.removeAttribute("aria-sort");
    }
    const gaps = options.gap && options.gapKey === state.key;
    const body = [];
    let previous = null;
    const sorted = (list) =>
      list
        .map((row, i) => ({ row: row, i: i, v: col.value(row) }))
        .sort((a, b) => sign * compareValues(a.v, b.v) || a.i - b.i)
        .map((x) => x.row);
    for (const item of order) {
      if (gaps) {
        const n = options.gap(item.row);
        if (previous !== null && Math.abs(n - previous) > 1) body.push(gapRow());
        previous = n;
      }
      body.push(rowOf(item.row, false));
      const kids = options.children ? options.children(item.row) : null;
      if (kids && kids.length && state.open.has(item.row)) {
        for (const kid of sorted(kids)) body.push(rowOf(kid, true));
      }
    }
    if (!body.length) {
      body.push(el("tr", null, el("td", { class: "text empty", colspan: columns.length, text: options.empty || "Nothing to show." })));
    }
    tbody.replaceChildren(...body);
  }

  function rowOf(row, child) {
    const attrs = Object.assign({}, options.rowAttrs ? options.rowAttrs(row) : null);
    if (child) attrs.class = ((attrs.class || "") + " child").trim();
    const tr = el("tr", attrs);
    columns.forEach((c, i) => {
      const td = el("td", { class: c.cls || null }, c.cell(row));
      const kids = !child && i === 0 && options.children ? options.children(row) : null;
      if (kids && kids.length) td.prepend(expander(row, kids.length));
      tr.appendChild(td);
    });
    return tr;
  }

  function expander(row, count) {
    const open = state.open.has(row);
    const toggle = () => {
      if (state.open.has(row)) state.open.delete(row);
      else state.open.add(row);
      draw();
    };
    const label = (open ? "hide the " : "show the ") + count + " threads";
    return el("button", { type: "button", class: "expander", "aria-expanded": String(open), title: label, "aria-label": label, onclick: toggle }, open ? "▾" : "▸");
  }

  function gapRow() {
    const tr = el("tr", { class: "gap", "aria-hidden": "true" });
    columns.forEach((c, i) => {
      tr.appendChild(el("td", { class: c.cls || null, text: i === 0 || c.key === "source" ? "⋮" : "" }));
    });
    return tr;
  }

  draw();
  return {
    node: el("div", { class: "table-wrap" }, table),
    table: table,
    sortBy: sortBy,
    setRows: (next) => {
      state.rows = next;
      draw();
    },
  };
}

/* The figure columns of a times table: CPU (bar and share), Python, native, system, wait,
 * samples, then any optional (memory, GPU) columns the rows carry.
 * ctx: {total: the run's CPU, scale: the CPU that fills a bar, minSamples}. */
function figureColumns(rows, ctx) {
  const columns = [
    {
      key: "cpu",
      label: "CPU",
      title: "CPU time (Python + native + system) as a share of all CPU time",
      value: (r) => cpuOf(r),
      cell: (r) => cpuCell(r, ctx),
      cls: "num",
    },
  ];
  for (const k of KINDS) {
    columns.push({
      key: k.key,
      label: k.label,
      title: k.label + " CPU: " + k.title,
      head: el("span", { class: "swatch-head k-" + k.key, "aria-hidden": "true" }),
      value: (r) => num(r[k.field]),
      cell: (r) => {
        const pct = percentOf(num(r[k.field]), ctx.total);
        return figure(fmtPercent(pct), { rough: isRough(r, ctx.minSamples), samples: r.samples, value: pct, unit: "%" });
      },
      cls: "num " + k.key,
    });
  }
  if (rows.some((r) => num(r.wait_s) > 0)) {
    columns.push({
      key: "wait",
      label: "wait",
      title: "off-CPU time: sleep, I/O, locks, waiting for the GIL",
      head: el("span", { class: "swatch-head k-wait", "aria-hidden": "true" }),
      value: (r) => num(r.wait_s),
      cell: (r) => fmtSeconds(num(r.wait_s)),
      cls: "num wait",
    });
  }
  if (rows.some((r) => num(r.await_s) > 0)) {
    columns.push({
      key: "await",
      label: "await",
      title: "asyncio tasks suspended at this await (each task counted, so concurrent awaits add up beyond the wall time)",
      head: el("span", { class: "swatch-head k-await", "aria-hidden": "true" }),
      value: (r) => num(r.await_s),
      cell: (r) => fmtSeconds(num(r.await_s)),
      cls: "num await",
    });
  }
  columns.push({
    key: "samples",
    label: "samples",
    title: "CPU samples behind the figures (fewer than " + ctx.minSamples + ": rough, marked " + ROUGH + ")",
    value: (r) => num(r.samples),
    cell: (r) => (num(r.samples) > 0 ? fmtCount(r.samples) : ""),
    cls: "num dim",
  });
  for (const opt of optionalColumns(rows)) {
    columns.push({
      key: opt.field,
      label: opt.label,
      title: opt.title,
      value: (r) => (typeof r[opt.field] === "number" ? r[opt.field] : null),
      cell: (r) => (typeof r[opt.field] === "number" ? opt.format(r[opt.field]) : ""),
      cls: "num",
    });
  }
  return columns;
}

function cpuCell(r, ctx) {
  const cpu = cpuOf(r);
  const pct = percentOf(cpu, ctx.total);
  const text = figure(fmtPercent(pct), { rough: isRough(r, ctx.minSamples), samples: r.samples, value: pct, unit: "%" });
  return el("div", { class: "cpu" }, el("span", { class: "pct" }, text), cpuBar(r, ctx.scale > 0 ? cpu / ctx.scale : 0, ctx.smallBars));
}

function maxOf(rows, f) {
  let m = 0;
  for (const r of rows) m = Math.max(m, f(r));
  return m;
}
