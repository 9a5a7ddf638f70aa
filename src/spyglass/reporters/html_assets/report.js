/* spyglass HTML report: the page itself, built from the JSON data islands. */

const TOP_FUNCTIONS = 15; // rows of the functions card

function readIsland(id) {
  const node = document.getElementById(id);
  return node ? JSON.parse(node.textContent) : null;
}

/* The profile as the page carries it, unpacked (spyglass.reporters.page_data): a list of
 * records written as {"$table": keys, "rows": [...]} (a row: the values in the keys' order,
 * or a record of its own), a column of repeated strings as indexes into "$strings". */
function unpackProfile(value) {
  // Own properties as JSON.parse makes them, even one named __proto__ (a file's path).
  const put = (out, key, v) => Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
  if (Array.isArray(value)) return value.map(unpackProfile);
  if (value === null || typeof value !== "object") return value;
  if (!Array.isArray(value.$table)) {
    const out = {};
    for (const key of Object.keys(value)) put(out, key, unpackProfile(value[key]));
    return out;
  }
  const keys = value.$table;
  const strings = value.$strings || {};
  return (value.rows || []).map((row) => {
    if (!Array.isArray(row)) return unpackProfile(row);
    const out = {};
    keys.forEach((key, i) => {
      put(out, key, Array.isArray(strings[key]) ? strings[key][row[i]] : unpackProfile(row[i]));
    });
    return out;
  });
}

function fatal(message) {
  const root = document.getElementById("report") || document.body;
  root.replaceChildren(el("div", { class: "fatal", role: "alert" }, el("strong", { text: "This report cannot be shown. " }), message));
}

/* The figure columns of a table, with the memory ones in a memory profile. */
function figures(rows, ctx) {
  if (!ctx.mem) return figureColumns(rows, ctx).concat(gpuColumns(rows, null));
  // Narrower CPU bars leave room for the memory columns.
  return figureColumns(rows, Object.assign({ smallBars: true }, ctx)).concat(memoryColumns(rows, ctx.mem), gpuColumns(rows, ctx.mem));
}

/* The few figure columns of the overview tables (hottest lines, functions), which leave
 * the room to their source: CPU with its Python/native/system bar, wait, memory and GPU. The
 * file cards have every column. */
function compactFigures(rows, ctx) {
  const keep = new Set(["cpu", "wait", "await", "mem", "gpu"]);
  return figures(rows, ctx).filter((c) => keep.has(c.key));
}

/* Whether a line or function has anything to show. */
function isBusy(l, ctx) {
  return cpuOf(l) > 0 || num(l.wait_s) > 0 || num(l.await_s) > 0 || (ctx.mem !== null && hasMemory(l));
}

/* How long ago the run started, as the page is opened: an old page left next to a newer
 * profile says that it is old. */
function age(started) {
  const minutes = (Date.now() / 1000 - started) / 60;
  if (!(minutes >= 1)) return " (just now)";
  const [n, unit] = minutes < 60 ? [minutes, "minute"] : minutes < 48 * 60 ? [minutes / 60, "hour"] : [minutes / 1440, "day"];
  const whole = Math.floor(n);
  return " (" + whole + " " + unit + (whole === 1 ? "" : "s") + " ago)";
}

function header(profile, config) {
  const interval = num(profile.interval_s) * 1000;
  const threads = Array.isArray(profile.threads) ? profile.threads.length : 0;
  const facts = [
    (fmtSeconds(num(profile.elapsed_s), true) || "0 s") + " elapsed",
    threads + (threads === 1 ? " thread" : " threads"),
    fmtCount(profile.samples) + " samples (every " + Number(interval.toPrecision(6)) + " ms of CPU)",
    profile.python_version ? "Python " + profile.python_version : "",
    profile.platform || "",
  ];
  const started = num(profile.started_at);
  if (started > 0) facts.push("started " + new Date(started * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC" + age(started));
  if (profile.attached === true) facts.push("attached to a running process: memory counts only what it allocated since");
  const status = profile.exit_status;
  const command = config.command || String(profile.program || "");
  return el(
    "header",
    { class: "top" },
    el(
      "div",
      { class: "wrap" },
      el("div", { class: "brand" }, el("span", { class: "brand-mark", "aria-hidden": "true" }), "spyglass profile"),
      el("h1", { text: command, title: command }),
      el(
        "p",
        { class: "facts" },
        facts.filter(Boolean).map((f) => el("span", { text: f })),
        status !== null && status !== undefined && status !== 0 ? el("span", { class: "bad", text: "exit status " + status }) : null,
      ),
    ),
  );
}

function summaryCard(profile, ctx) {
  const total = ctx.total;
  const kpi = (label, value, unit, cls, title) =>
    el("div", { class: "kpi" + (cls ? " " + cls : ""), title: title || null }, el("div", { class: "label", text: label }), el("div", { class: "value" }, value, unit ? el("small", { text: unit }) : null));
  const secs = (v) => (fmtSeconds(v) || "0s").replace(/s$/, "");
  const kpis = el(
    "div",
    { class: "kpis" },
    kpi("CPU", secs(total), "s", "", "Python + native + system CPU time of the whole process"),
    kpi("wait", secs(num(profile.wait_s)), "s", "wait", "off-CPU: sleep, I/O, locks, waiting for the GIL"),
    num(profile.await_s) > 0 ? kpi("await", secs(num(profile.await_s)), "s", "await", "asyncio tasks suspended at an await, each task counted") : null,
    kpi("elapsed", secs(num(profile.elapsed_s)), "s", "", "wall time profiled"),
    kpi("samples", fmtCount(profile.samples), "", "", "CPU samples taken"),
    OPTIONAL_FIELDS.filter((o) => typeof profile[o.field] === "number").map((o) => kpi(o.label, o.format(profile[o.field]), "", "", o.title)),
  );
  const bar = el("div", { class: "stackbar", role: "img", "aria-label": KINDS.map((k) => k.label + " " + (fmtPercent(percentOf(num(profile[k.field]), total)) || "0%")).join(", ") });
  const legend = el("ul", { class: "legend" });
  for (const k of KINDS) {
    const v = num(profile[k.field]);
    const pct = percentOf(v, total);
    if (v > 0) {
      const seg = el("span", { class: "k-" + k.key, title: k.label + ": " + k.title });
      seg.style.width = pct + "%";
      bar.appendChild(seg);
    }
    legend.appendChild(el("li", { title: k.title }, swatch(k.key), el("b", { text: k.label }), fmtSeconds(v, true) || "0 s", el("span", { class: "muted", text: fmtPercent(pct) || "0%" })));
  }
  legend.appendChild(el("li", { title: "off-CPU: sleep, I/O, locks, waiting for the GIL (not part of the CPU figures)" }, swatch("wait"), el("b", { text: "wait" }), fmtSeconds(num(profile.wait_s), true) || "0 s", el("span", { class: "muted", text: "off-CPU" })));
  const card = el("section", { class: "card", "aria-labelledby": "totals-h" }, el("div", { class: "card-head" }, el("h2", { id: "totals-h", text: "Run totals" })), kpis, bar, legend);
  const outside = profile.unattributed ? percentOf(cpuOf(profile.unattributed), total) : 0;
  if (outside >= 0.05) {
    card.appendChild(el("p", { class: "note", text: fmtPercent(outside) + " of CPU ran outside profiled files (start-up, libraries, native threads)." }));
  }
  return card;
}

function memoryCard(profile, ctx) {
  return el("section", { class: "card", id: "memory", "aria-labelledby": "memory-h" }, el("div", { class: "card-head" }, el("h2", { id: "memory-h", text: "Memory" }), el("span", { class: "sub", text: "MB = 10\u2076 bytes" })), memorySection(profile, ctx.anchorOf));
}

/* The threads, grouped as the renderer says (threads named alike, such as a server's
 * "Thread-N (process_request_thread)", make one row that expands to its members). */
function threadsCard(profile, ctx) {
  const threads = Array.isArray(profile.threads) ? profile.threads : [];
  if (threads.length < 2) return null;
  const given = Array.isArray(ctx.config.threads) ? ctx.config.threads : threads.map((t, i) => ({ name: t.name, members: [i] }));
  const groups = given.map((g) => threadGroup(g, threads)).filter((g) => g.members.length);
  const tctx = { total: ctx.total, scale: maxOf(groups, cpuOf), minSamples: ctx.minSamples, mem: ctx.mem };
  const name = (t) => (t.name === null || t.name === undefined ? null : String(t.name));
  const columns = [
    {
      key: "thread",
      label: "thread",
      text: true,
      value: name,
      cell: (t) => (name(t) === null ? el("span", { class: "empty", text: "(unnamed)" }) : name(t)),
      cls: "text brk",
      grow: true,
    },
    { key: "count", label: "threads", title: "how many threads the row stands for", value: (t) => (t.members ? t.members.length : 1), cell: (t) => (t.members && t.members.length > 1 ? "×" + fmtCount(t.members.length) : ""), cls: "num dim" },
    { key: "tid", label: "tid", value: (t) => (t.members ? (t.members.length === 1 ? num(t.members[0].tid) : null) : num(t.tid)), cell: (t) => (t.members ? (t.members.length === 1 ? String(t.members[0].tid) : "") : String(t.tid)), cls: "num dim", firstDir: "ascending" },
    ...figures(threads, tctx),
    {
      key: "spread",
      label: "spread",
      title: "the least and the most CPU time of one thread of the group",
      value: (t) => (t.members && t.members.length > 1 ? t.maxCpu : null),
      cell: (t) => (t.members && t.members.length > 1 ? (fmtSeconds(t.minCpu, true) || "0 s") + " – " + (fmtSeconds(t.maxCpu, true) || "0 s") : ""),
      cls: "num dim",
    },
  ];
  const table = sortableTable(columns, groups, {
    name: "threads",
    caption: "Threads",
    sort: { key: "cpu", dir: "descending" },
    children: (g) => (g.members && g.members.length > 1 ? g.members : null),
    childNoun: "threads",
    rowAttrs: (t) => (t.members ? { "data-group": t.members.length > 1 ? String(t.members.length) : null } : null),
  });
  const grouped = groups.length < threads.length;
  const sub = fmtCount(threads.length) + " threads" + (grouped ? " in " + groups.length + " groups of the same name, numbers aside" : "");
  return el("section", { class: "card", id: "threads", "aria-labelledby": "threads-h" }, el("div", { class: "card-head" }, el("h2", { id: "threads-h", text: "Threads" }), el("span", { class: "sub", text: sub })), table.node);
}

/* A group of threads as one row: the members' figures summed. */
function threadGroup(given, threads) {
  const members = (Array.isArray(given.members) ? given.members : []).map((i) => threads[i]).filter(Boolean);
  const row = { name: members.length === 1 ? members[0].name : given.name, members: members, minCpu: Infinity, maxCpu: 0 };
  for (const key of ["cpu_python_s", "cpu_native_s", "cpu_system_s", "wait_s", "await_s", "samples", "mem_alloc_mb", "copy_mb"]) {
    if (members.some((t) => typeof t[key] === "number")) row[key] = members.reduce((s, t) => s + num(t[key]), 0);
  }
  for (const t of members) {
    row.minCpu = Math.min(row.minCpu, cpuOf(t));
    row.maxCpu = Math.max(row.maxCpu, cpuOf(t));
  }
  return row;
}

/* Child processes merged into the run: each process's own figures. */
function processesCard(profile, ctx) {
  const processes = Array.isArray(profile.processes) ? profile.processes : [];
  if (processes.length < 2) return null;
  const pctx = { total: ctx.total, scale: maxOf(processes, cpuOf), minSamples: ctx.minSamples, mem: ctx.mem };
  const argv = (p) => (Array.isArray(p.argv) && p.argv.length ? p.argv.join(" ") : String(p.program || ""));
  const command = (p) => (p.role ? String(p.role) + ": " + argv(p) : argv(p));
  const columns = [
    { key: "pid", label: "pid", value: (p) => num(p.pid), cell: (p) => String(p.pid), cls: "num dim", firstDir: "ascending" },
    { key: "command", label: "command", text: true, value: command, cell: command, cls: "text brk", grow: true },
    {
      key: "status",
      label: "exit",
      value: (p) => (p.exit_status === null || p.exit_status === undefined ? null : num(p.exit_status)),
      cell: processStatus,
      cls: "num dim",
    },
    ...figures(processes, pctx),
  ];
  const table = sortableTable(columns, processes, { name: "processes", caption: "Processes", sort: { key: "cpu", dir: "descending" } });
  return el("section", { class: "card", id: "processes", "aria-labelledby": "processes-h" }, el("div", { class: "card-head" }, el("h2", { id: "processes-h", text: "Processes" })), table.node);
}

/* The costliest functions of all profiled files. */
function functionsCard(profile, paths, ctx) {
  const rows = [];
  paths.forEach((path, index) => {
    for (const f of profile.files[path].functions || []) if (isBusy(f, ctx)) rows.push(Object.assign({ path: path, index: index }, f));
  });
  if (rows.length < 2) return null;
  rows.sort((a, b) => cpuOf(b) - cpuOf(a) || num(b.wait_s) - num(a.wait_s));
  const shown = rows.slice(0, TOP_FUNCTIONS);
  const fctx = { total: ctx.total, scale: maxOf(shown, cpuOf), minSamples: ctx.minSamples, mem: ctx.mem };
  const columns = [
    { key: "function", label: "function", text: true, grow: true, value: (f) => String(f.name), cell: (f) => el("span", { class: "mono" }, String(f.name)), cls: "text brk" },
    ...compactFigures(shown, fctx),
    {
      key: "where",
      label: "file",
      text: true,
      value: (f) => shortPath(f.path) + ":" + String(f.first_lineno).padStart(8, "0"),
      cell: (f) => el("a", { href: "#" + fileAnchor(f.index), class: "mono", title: f.path + ":" + f.first_lineno }, shortPath(f.path) + ":" + f.first_lineno),
      cls: "text",
    },
  ];
  const table = sortableTable(columns, shown, { name: "top-functions", caption: "Costliest functions", sort: { key: "cpu", dir: "descending" } });
  const sub = rows.length > shown.length ? "the " + shown.length + " costliest of " + rows.length : "across all files";
  return el("section", { class: "card", id: "functions", "aria-labelledby": "functions-h" }, el("div", { class: "card-head" }, el("h2", { id: "functions-h", text: "Functions" }), el("span", { class: "sub", text: sub })), table.node);
}

/* A process's exit status, or what became of one that left none. */
function processStatus(p) {
  if (p.not_profiled) return "not profiled: " + p.not_profiled;
  if (p.ended) return p.ended; // a pool's shutdown: no failure
  if (p.role) return p.role; // multiprocessing's own helper
  if (p.recovered) return "died";
  return p.exit_status === null || p.exit_status === undefined ? "" : String(p.exit_status);
}

function fileAnchor(index) {
  return "file-" + (index + 1);
}

function filesCard(profile, paths, ctx) {
  const rows = paths.map((path, i) => Object.assign({ path: path, index: i }, profile.files[path]));
  const fctx = { total: ctx.total, scale: maxOf(rows, cpuOf), minSamples: ctx.minSamples, mem: ctx.mem };
  const columns = [
    {
      key: "file",
      label: "file",
      text: true,
      grow: true,
      value: (r) => r.path,
      cell: (r) => el("a", { href: "#" + fileAnchor(r.index), title: r.path }, pathParts(r.path, "file-link")),
      cls: "text brk",
    },
    ...figures(rows, fctx),
  ];
  const table = sortableTable(columns, rows, { name: "files", caption: "Profiled files", sort: { key: "cpu", dir: "descending" } });
  return el("section", { class: "card", "aria-labelledby": "files-h" }, el("div", { class: "card-head" }, el("h2", { id: "files-h", text: "Profiled files" }), el("span", { class: "sub", text: paths.length + (paths.length === 1 ? " file" : " files") + " with samples" })), table.node);
}

function hottestCard(profile, paths, top, ctx) {
  const rows = [];
  for (const [path, lineno] of top) {
    const file = profile.files[path];
    const line = file && (file.lines || []).find((l) => l.lineno === lineno);
    if (line) rows.push(Object.assign({ path: path, index: paths.indexOf(path) }, line));
  }
  if (rows.length === 0) return null;
  const hctx = { total: ctx.total, scale: maxOf(rows, cpuOf), minSamples: ctx.minSamples, mem: ctx.mem };
  const columns = [
    {
      key: "where",
      label: "line",
      text: true,
      value: (r) => shortPath(r.path) + ":" + String(r.lineno).padStart(8, "0"),
      cell: (r) => el("a", { href: "#" + fileAnchor(r.index) + "-L" + r.lineno, class: "mono", title: r.path + ":" + r.lineno }, shortPath(r.path) + ":" + r.lineno),
      cls: "text",
    },
    ...compactFigures(rows, hctx),
    sourceColumn(),
  ];
  const table = sortableTable(columns, rows, { name: "hottest", caption: "Hottest lines", sort: { key: "cpu", dir: "descending" } });
  return el("section", { class: "card", "aria-labelledby": "hot-h" }, el("div", { class: "card-head" }, el("h2", { id: "hot-h", text: "Hottest lines" }), el("span", { class: "sub", text: "across all files" })), table.node);
}

function sourceColumn() {
  return {
    key: "source",
    label: "source",
    text: true,
    grow: true,
    value: (r) => String(r.shown !== undefined ? r.shown : r.source || "").trim(),
    cell: (r) => {
      const text = r.shown !== undefined ? r.shown : String(r.source || "").trim();
      const source = text.trim() ? text : el("span", { class: "na", text: "(source not available)" });
      const native = nativeUnder(r);
      return native ? el("div", null, el("div", null, source), native) : source;
    },
    cls: "src",
  };
}

function flameCard(profile, ctx) {
  const fg = flameGraph(profile, ctx);
  const card = el(
    "section",
    { class: "card", "aria-labelledby": "flame-h" },
    el("div", { class: "card-head" }, el("h2", { id: "flame-h", text: "Flame graph" }), el("span", { class: "sub", text: "Python stacks, callers above callees" }), el("span", { class: "spacer" }), fg.toolbar),
    fg.box,
    fg.legend,
  );
  document.body.appendChild(fg.tip);
  return { card: card, render: fg.render };
}

/* The lines a report shows by default; the renderer sends them (same rules as the terminal
 * report), this is the fallback: CPU or wait of at least min_percent, or the file's hottest. */
function linesThatMatter(profile, path, busy, ctx) {
  const given = ctx.config.matter && ctx.config.matter[path];
  if (Array.isArray(given)) return new Set(given);
  const cpuCut = (ctx.total * ctx.minPercent) / 100;
  const waitCut = (num(profile.wait_s) * ctx.minPercent) / 100;
  const awaitCut = (num(profile.await_s) * ctx.minPercent) / 100;
  const memCut = (num(profile.mem_alloc_mb) * ctx.minPercent) / 100;
  const keep = new Set();
  let hottest = null;
  for (const l of busy) {
    if ((cpuOf(l) > 0 && cpuOf(l) >= cpuCut) || (num(l.wait_s) > 0 && num(l.wait_s) >= waitCut)) keep.add(l.lineno);
    if (num(l.await_s) > 0 && num(l.await_s) >= awaitCut) keep.add(l.lineno);
    if (ctx.mem && num(l.mem_alloc_mb) > 0 && num(l.mem_alloc_mb) >= memCut) keep.add(l.lineno);
    if (!hottest || cpuOf(l) > cpuOf(hottest) || (cpuOf(l) === cpuOf(hottest) && num(l.wait_s) > num(hottest.wait_s))) hottest = l;
  }
  if (hottest) keep.add(hottest.lineno);
  return keep;
}

function fileCard(profile, path, index, ctx) {
  const file = profile.files[path];
  const anchor = fileAnchor(index);
  const busy = (file.lines || []).filter((l) => isBusy(l, ctx));
  const shown = dedent(busy.map((l) => l.source || ""));
  const lines = busy.map((l, i) => Object.assign({ shown: shown[i] }, l));
  const matter = linesThatMatter(profile, path, busy, ctx);
  const hot = new Set(ctx.top.filter((t) => t[0] === path).map((t) => t[1]));
  const important = lines.filter((l) => matter.has(l.lineno));
  const lctx = { total: ctx.total, scale: ctx.lineScale, minSamples: ctx.minSamples, mem: ctx.mem };
  const lineColumns = [
    { key: "line", label: "line", title: "line number", value: (l) => l.lineno, cell: (l) => String(l.lineno), cls: "num lineno", firstDir: "ascending" },
    ...figures(lines, lctx),
    sourceColumn(),
  ];
  const lineTable = sortableTable(lineColumns, important, {
    name: "lines",
    caption: "Lines of " + path,
    sort: { key: "line", dir: "ascending" },
    gapKey: "line",
    gap: (l) => l.lineno,
    rowAttrs: (l) => ({ id: anchor + "-L" + l.lineno, class: hot.has(l.lineno) ? "hot" : null }),
  });

  const hidden = lines.length - important.length;
  const hiddenCpu = lines.filter((l) => !matter.has(l.lineno)).reduce((s, l) => s + cpuOf(l), 0);
  const more = el("p", { class: "more" });
  const setMore = (all) => {
    more.textContent = all || hidden === 0 ? "" : "+ " + hidden + (hidden === 1 ? " more line" : " more lines") + " below " + ctx.minPercent + "% (" + (fmtPercent(percentOf(hiddenCpu, ctx.total)) || "0%") + " of CPU in all)";
    more.hidden = !more.textContent;
  };
  setMore(false);
  const matterBtn = el("button", { type: "button", "aria-pressed": "true", "data-lines": "matter" }, "Lines that matter (" + important.length + ")");
  const allBtn = el("button", { type: "button", "aria-pressed": "false", "data-lines": "all" }, "All sampled lines (" + lines.length + ")");
  const show = (all) => {
    matterBtn.setAttribute("aria-pressed", String(!all));
    allBtn.setAttribute("aria-pressed", String(all));
    lineTable.setRows(all ? lines : important);
    setMore(all);
  };
  matterBtn.addEventListener("click", () => show(false));
  allBtn.addEventListener("click", () => show(true));
  const toggle = el("div", { class: "seg", role: "group", "aria-label": "which lines" }, matterBtn, allBtn);

  const cpu = cpuOf(file);
  const share = el("div", { class: "share" });
  const bar = el("div", { class: "stackbar", "aria-hidden": "true" });
  for (const k of KINDS) {
    const seg = el("span", { class: "k-" + k.key });
    seg.style.width = percentOf(num(file[k.field]), ctx.total) + "%";
    bar.appendChild(seg);
  }
  const wait = num(file.wait_s);
  append(share, bar, el("span", null, el("b", { text: fmtPercent(percentOf(cpu, ctx.total)) || "0%" }), " of CPU (" + (fmtSeconds(cpu, true) || "0 s") + ")", wait > 0 ? " · " + fmtSeconds(wait, true) + " wait" : "", " · " + fmtCount(file.samples) + " samples"));

  const card = el(
    "section",
    { class: "card file", id: anchor, "aria-labelledby": anchor + "-h", "data-path": path },
    el("div", { class: "card-head" }, el("h2", { id: anchor + "-h", class: "file-title" }, pathParts(path, "")), el("span", { class: "spacer" }), important.length < lines.length ? toggle : null),
    share,
    lineTable.node,
    more,
  );

  const funcs = (file.functions || []).filter((f) => isBusy(f, ctx));
  if (funcs.length) {
    const fctx = { total: ctx.total, scale: ctx.functionScale, minSamples: ctx.minSamples, mem: ctx.mem };
    const columns = [
      { key: "first", label: "line", title: "the function's first line", value: (f) => num(f.first_lineno), cell: (f) => String(f.first_lineno), cls: "num lineno", firstDir: "ascending" },
      ...figures(funcs, fctx),
      { key: "function", label: "function", text: true, grow: true, value: (f) => String(f.name), cell: (f) => String(f.name), cls: "src" },
    ];
    const table = sortableTable(columns, funcs, { name: "functions", caption: "Functions of " + path, sort: { key: "cpu", dir: "descending" } });
    card.append(el("h3", { text: "Functions" }), table.node);
  }
  return card;
}

function footer(profile, ctx) {
  const notes = [
    "% = share of all CPU time (" + (fmtSeconds(ctx.total, true) || "0 s") + "), split into Python, native and system.",
    ROUGH + " = fewer than " + ctx.minSamples + " samples behind the figure: rough, hover it for the ± range.",
    "wait = time off the CPU: sleep, I/O, locks, waiting for the GIL.",
  ];
  if (ctx.mem) notes.push("MB = 10\u2076 bytes. memory = MB allocated (sampled), py = the share through Python's allocator; peak = the most MB one execution held; timeline = the footprint while the line ran; copy = MB/s copied.");
  const made = "spyglass " + (profile.spyglass_version || "") + " · profile schema " + (profile.schema_version || "?") + (ctx.config.profile_path ? " · " + ctx.config.profile_path : "");
  return el("footer", null, notes.map((n) => el("p", { text: n })), el("p", { text: made }));
}

function main() {
  let profile;
  let config;
  try {
    profile = unpackProfile(readIsland("profile-data"));
    config = readIsland("report-config") || {};
  } catch (e) {
    fatal("Its data could not be read (" + e.message + ").");
    return;
  }
  if (!profile || typeof profile !== "object" || typeof profile.files !== "object" || profile.files === null) {
    fatal("It holds no spyglass profile.");
    return;
  }
  const paths = Array.isArray(config.files) ? config.files.filter((p) => profile.files[p]) : Object.keys(profile.files).sort((a, b) => cpuOf(profile.files[b]) - cpuOf(profile.files[a]));
  const allLines = [];
  const allFuncs = [];
  for (const p of paths) {
    allLines.push(...(profile.files[p].lines || []));
    allFuncs.push(...(profile.files[p].functions || []));
  }
  const ctx = {
    config: config,
    total: cpuOf(profile),
    minSamples: num(config.min_samples) || 10,
    minPercent: typeof config.min_percent === "number" ? config.min_percent : 1,
    top: Array.isArray(config.top) ? config.top : [],
    lineScale: maxOf(allLines, cpuOf),
    functionScale: maxOf(allFuncs, cpuOf),
    mem: profile.memory_profiled === true ? { elapsed: num(profile.elapsed_s) } : null,
    anchorOf: (path) => (paths.indexOf(path) >= 0 ? fileAnchor(paths.indexOf(path)) : null),
  };
  document.title = "spyglass · " + (config.command || String(profile.program || "profile"));
  // What a reader looks for first comes first: the lines that cost the most, with their
  // source; then where they are (files, functions), memory, threads and the flame graph;
  // then every file's own lines.
  const body = el("main", { class: "wrap" });
  let flame = null;
  if (paths.length === 0) {
    body.appendChild(el("section", { class: "card" }, el("h2", { text: "No samples landed in profiled code." }), el("p", { class: "note", text: profile.stacks && profile.stacks.length ? "Nothing ran in the files profiled as your code: the flame graph below is the whole run, libraries included. To report other files line by line: --profile-all (every file), --profile-only SUBSTR (files whose path holds SUBSTR) or --program-path DIR (the directory of your code)." : "The run may have been too short, or its time was spent outside the profiled files (--profile-all reports every file)." })));
  } else {
    append(body, hottestCard(profile, paths, ctx.top, ctx));
  }
  body.appendChild(summaryCard(profile, ctx));
  append(body, testsCard(profile, ctx));
  if (paths.length > 0) append(body, filesCard(profile, paths, ctx), functionsCard(profile, paths, ctx));
  append(body, nativeFunctionsCard(profile, ctx));
  if (ctx.mem) body.append(memoryCard(profile, ctx), leaksCard(profile, ctx.anchorOf));
  append(body, gpuCard(profile));
  append(body, threadsCard(profile, ctx), tasksCard(profile), processesCard(profile, ctx));
  if (Array.isArray(profile.stacks) && profile.stacks.length) {
    flame = flameCard(profile, ctx);
    body.append(flame.card, treeCard(profile, ctx));
  }
  paths.forEach((p, i) => {
    body.appendChild(fileCard(profile, p, i, ctx));
  });
  body.appendChild(footer(profile, ctx));
  document.getElementById("report").replaceChildren(header(profile, config), body);
  if (flame) flame.render();
  if (location.hash) {
    let target = null;
    try {
      target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    } catch (e) {
      target = null; // a malformed fragment: stay at the top
    }
    if (target) target.scrollIntoView();
  }
  document.documentElement.setAttribute("data-ready", "true");
}

main();
