/* spyglass HTML report: the flame graph of profile.stacks (root on top, callees below).
 *
 * Stacks are merged into a tree keyed by (file, function) of each frame, outermost first,
 * so a function is one box whichever of its lines made the call (the lines are listed in
 * its tooltip). Runs of import-machinery frames (<frozen importlib._bootstrap...>) become
 * one "import" frame unless asked for. A frame's width is its CPU time (optionally plus
 * wait) as a share of the frame the view is zoomed into. At most FG_MAX_ROWS levels are
 * drawn: a deeper tower ends in a fold that zooms into it. Frames are focusable (one at a
 * time: arrow keys move, Enter zooms, Escape zooms out) and show a tooltip on hover and
 * focus; the search box highlights the frames whose function or file matches. */

const FG_ROW = 22; // px per stack level, the frame height plus its 1 px gap
const FG_MIN_PX = 1; // frames narrower than this are not drawn (nor their callees)
const FG_SPLIT_PX = 24; // frames at least this wide get a Python/native/system stripe
const FG_TEXT_PX = 28; // and a label
const FG_MAX_ROWS = 24; // levels drawn below the zoomed frame before a tower is folded
const FG_ANCESTORS = 3; // levels of callers drawn above the zoomed frame
const IMPORT_PREFIX = "<frozen importlib";

function isImportFrame(f) {
  return String(f.file).startsWith(IMPORT_PREFIX);
}

function buildFlameTree(profile, showImports) {
  const frames = Array.isArray(profile.frames) ? profile.frames : [];
  let count = 0;
  const make = (parent, frame) => ({
    id: count++,
    parent: parent,
    frame: frame,
    depth: parent ? parent.depth + 1 : 0,
    py: 0,
    nat: 0,
    sys: 0,
    wait: 0,
    samples: 0,
    lines: new Map(),
    children: new Map(),
  });
  const add = (node, s) => {
    node.py += num(s.cpu_python_s);
    node.nat += num(s.cpu_native_s);
    node.sys += num(s.cpu_system_s);
    node.wait += num(s.wait_s);
    node.samples += num(s.samples);
  };
  const importFrame = { file: IMPORT_PREFIX + ">", function: "import (import machinery folded)", lineno: 0, folded: true };
  const root = make(null, null);
  for (const stack of Array.isArray(profile.stacks) ? profile.stacks : []) {
    let node = root;
    add(node, stack);
    for (const index of stack.frames || []) {
      let f = frames[index];
      if (!f) break;
      if (!showImports && isImportFrame(f)) {
        if (node.frame === importFrame) continue; // one frame for the whole run of them
        f = importFrame;
      }
      const key = String(f.file) + "\u0000" + String(f.function);
      let child = node.children.get(key);
      if (!child) {
        child = make(node, f);
        node.children.set(key, child);
      }
      add(child, stack);
      const line = num(f.lineno);
      child.lines.set(line, (child.lines.get(line) || 0) + cpuOf(stack) + num(stack.wait_s));
      node = child;
    }
    // Mixed stacks: the native functions the stack's native samples interrupted, below its
    // innermost Python frame after their native callers (only native time goes there).
    const below = node;
    for (const nf of Array.isArray(stack.native) ? stack.native : []) {
      const chain = Array.isArray(nf.callers) ? nf.callers.concat([nf]) : [nf];
      let at = below;
      for (const c of chain) {
        const f = { file: String(c.library || "[native]"), function: String(c.name), lineno: 0, native: true };
        const key = "\u0001" + f.file + "\u0000" + f.function;
        let child = at.children.get(key);
        if (!child) {
          child = make(at, f);
          at.children.set(key, child);
        }
        add(child, { cpu_native_s: nf.cpu_s, samples: nf.samples });
        at = child;
      }
    }
  }
  return { root: root, count: count };
}

function hashString(s) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

function flameGraph(profile, ctx) {
  let tree = buildFlameTree(profile, false);
  const profiled = new Set(Object.keys(profile.files || {}));
  const state = { zoom: tree.root, wait: false, focus: tree.root.id, imports: false, query: "" };
  let drawn = new Map(); // node id -> {node, x, w, el}
  let rows = []; // display row -> drawn entries, left to right

  const box = el("div", { class: "flame", role: "group", "aria-label": "Flame graph: arrow keys move, Enter zooms, Escape zooms out", "data-flame": "" });
  const tip = el("div", { class: "tip", role: "tooltip", id: "flame-tip", hidden: true });
  const reset = el("button", { type: "button", class: "btn", "data-action": "zoom-reset", disabled: true, onclick: () => zoomTo(tree.root) }, "Reset zoom");
  const cpuOnly = el("button", { type: "button", "aria-pressed": "true", "data-metric": "cpu", onclick: () => setWait(false) }, "CPU");
  const withWait = el("button", { type: "button", "aria-pressed": "false", "data-metric": "cpu+wait", onclick: () => setWait(true) }, "CPU + wait");
  const imports = el("button", { type: "button", class: "btn", "aria-pressed": "false", "data-action": "imports", title: "show every frame of Python's import machinery instead of one per import", onclick: () => setImports(!state.imports) }, "Import frames");
  const search = el("input", { type: "search", class: "fg-search", placeholder: "Find a function or file", "aria-label": "highlight the frames whose function or file contains", "data-action": "search" });
  const found = el("span", { class: "fg-found", "aria-live": "polite" });
  search.addEventListener("input", () => {
    state.query = search.value.trim().toLowerCase();
    highlight();
  });
  const toolbar = el("div", { class: "toolbar" }, search, found, el("div", { class: "seg", role: "group", "aria-label": "frame width" }, cpuOnly, withWait), imports, reset);

  const value = (n) => n.py + n.nat + n.sys + (state.wait ? n.wait : 0);
  const isTruncated = (n) => n.frame && n.frame.file === "<truncated>";

  function label(n) {
    if (!n.frame) return "all stacks";
    if (isTruncated(n)) return "(outer frames not recorded)";
    return String(n.frame.function);
  }

  function where(n) {
    if (!n.frame || n.frame.folded) return n.frame ? "Python's import machinery, folded" : "";
    if (n.frame.native) return "native, in " + String(n.frame.file);
    const lines = Array.from(n.lines.entries()).sort((a, b) => b[1] - a[1]).map((e) => e[0]);
    const shown = lines.slice(0, 4).join(", ") + (lines.length > 4 ? ", …" : "");
    return String(n.frame.file) + ":" + shown;
  }

  function setWait(on) {
    state.wait = on;
    cpuOnly.setAttribute("aria-pressed", String(!on));
    withWait.setAttribute("aria-pressed", String(on));
    if (value(state.zoom) <= 0) state.zoom = tree.root;
    render();
  }

  function setImports(on) {
    state.imports = on;
    imports.setAttribute("aria-pressed", String(on));
    tree = buildFlameTree(profile, on);
    state.zoom = tree.root;
    state.focus = tree.root.id;
    reset.disabled = true;
    render();
  }

  function zoomTo(n) {
    state.zoom = n;
    state.focus = n.id;
    reset.disabled = n === tree.root;
    render();
    focusNode(n.id);
  }

  /* Frames matching the search: highlighted, the rest dimmed; the share they cover. */
  function highlight() {
    const q = state.query;
    let covered = 0;
    let hits = 0;
    const matches = (n) => n.frame && !isTruncated(n) && (String(n.frame.function).toLowerCase().includes(q) || String(n.frame.file).toLowerCase().includes(q));
    const walk = (n, inside) => {
      const hit = q !== "" && matches(n);
      if (hit) hits += 1;
      if (hit && !inside) covered += value(n);
      for (const c of n.children.values()) walk(c, inside || hit);
    };
    walk(tree.root, false);
    for (const item of drawn.values()) {
      const hit = q !== "" && !item.fold && matches(item.node);
      item.el.classList.toggle("match", hit);
      item.el.classList.toggle("unmatched", q !== "" && !hit);
    }
    found.textContent = q === "" ? "" : hits ? hits + (hits === 1 ? " frame" : " frames") + ", " + (fmtPercent(percentOf(covered, value(tree.root))) || "0%") + " of the graph" : "no frame matches";
  }

  function render() {
    hideTip();
    drawn = new Map();
    rows = [];
    const total = value(state.zoom);
    if (value(tree.root) <= 0 || total <= 0) {
      box.style.height = "";
      box.replaceChildren(el("p", { class: "fg-empty", text: state.wait ? "No stacks were recorded." : "No CPU time in the recorded stacks; try CPU + wait." }));
      return;
    }
    const width = box.clientWidth || 960;
    // Only a few callers of the zoomed frame are drawn, so a deep zoom needs no tall box.
    const base = Math.max(0, state.zoom.depth - FG_ANCESTORS);
    const last = state.zoom.depth + FG_MAX_ROWS - 1;
    const items = [];
    for (let n = state.zoom; n && n.depth >= base; n = n.parent) items.unshift({ node: n, x: 0, w: 1, ancestor: n !== state.zoom });
    // The root stays on top, to zoom out with, above the callers that are drawn.
    const skip = base > 0 ? base - 1 : 0;
    if (base > 0) items.unshift({ node: tree.root, x: 0, w: 1, ancestor: true });
    const todo = [{ node: state.zoom, x: 0 }];
    while (todo.length) {
      const { node, x } = todo.pop();
      const kids = Array.from(node.children.values()).filter((c) => value(c) > 0);
      kids.sort((a, b) => value(b) - value(a) || a.id - b.id);
      if (node.depth >= last && kids.length) {
        // A tower past the cap: one fold under it that zooms in (Enter or click).
        const w = value(node) / total;
        if (w * width >= FG_MIN_PX) items.push({ node: node, x: x, w: w, ancestor: false, fold: deepest(node) - node.depth });
        continue;
      }
      let cx = x;
      for (const child of kids) {
        const w = value(child) / total;
        if (w * width >= FG_MIN_PX) {
          items.push({ node: child, x: cx, w: w, ancestor: false });
          todo.push({ node: child, x: cx });
        }
        cx += w;
      }
    }
    let lowest = 0;
    const nodes = items.map((item) => {
      item.row = item.node === tree.root ? 0 : item.node.depth - skip + (item.fold ? 1 : 0);
      lowest = Math.max(lowest, item.row);
      item.el = frameElement(item, width);
      drawn.set(item.fold ? "fold-" + item.node.id : item.node.id, item);
      if (!rows[item.row]) rows[item.row] = [];
      rows[item.row].push(item);
      return item.el;
    });
    for (const row of rows) if (row) row.sort((a, b) => a.x - b.x);
    box.style.height = (lowest + 1) * FG_ROW + "px";
    box.replaceChildren(...nodes);
    if (!drawn.has(state.focus)) state.focus = state.zoom.id;
    drawn.get(state.focus).el.tabIndex = 0;
    highlight();
  }

  function deepest(node) {
    let most = node.depth;
    const todo = [node];
    while (todo.length) {
      const n = todo.pop();
      most = Math.max(most, n.depth);
      for (const c of n.children.values()) if (value(c) > 0) todo.push(c);
    }
    return most;
  }

  function frameElement(item, width) {
    const n = item.node;
    if (item.fold) {
      const text = "▾ " + item.fold + (item.fold === 1 ? " deeper level" : " deeper levels") + " folded: click to expand";
      const fold = el("div", { class: "fg-frame fold", role: "button", tabindex: "-1", "data-node": "fold-" + n.id, "aria-label": text + " (" + label(n) + ")" }, item.w * width >= FG_TEXT_PX ? text : null);
      fold.style.left = item.x * 100 + "%";
      fold.style.width = item.w * 100 + "%";
      fold.style.top = item.row * FG_ROW + "px";
      return fold;
    }
    let cls = "fg-frame";
    if (!n.frame) cls += " root";
    else if (isTruncated(n)) cls += " trunc";
    else if (n.frame.native) cls += " native";
    else if (!profiled.has(n.frame.file)) cls += " lib";
    if (item.ancestor) cls += " ancestor";
    if (n.frame && n.frame.folded) cls += " imports";
    const text = n.frame ? label(n) : "all stacks · " + fmtSeconds(value(n), true) + (state.wait ? " CPU + wait" : " CPU");
    const wide = item.w * width >= FG_TEXT_PX;
    if (!wide) cls += " tiny"; // no label and no padding, which would widen it
    const node = el("div", { class: cls, role: "button", tabindex: "-1", "data-node": n.id, "aria-label": ariaLabel(n), "aria-describedby": "flame-tip" }, wide ? text : null);
    node.style.left = item.x * 100 + "%";
    node.style.width = item.w * 100 + "%";
    node.style.top = item.row * FG_ROW + "px";
    if (n.frame && !isTruncated(n)) {
      const h = hashString(String(n.frame.file) + "\u0000" + String(n.frame.function));
      const hue = n.frame.native ? 95 + (h % 40) : profiled.has(n.frame.file) ? h % 40 : 192 + (h % 40);
      node.style.setProperty("--h", String(hue));
      node.style.setProperty("--l", ((h >>> 8) % 9) - 4 + "%");
    }
    const cpu = n.py + n.nat + n.sys;
    if (n.frame && cpu > 0 && item.w * width >= FG_SPLIT_PX) {
      const split = el("span", { class: "split", "aria-hidden": "true" });
      for (const [k, v] of [["python", n.py], ["native", n.nat], ["system", n.sys]]) {
        if (v <= 0) continue;
        const seg = el("span", { class: "k-" + k });
        seg.style.width = (100 * v) / cpu + "%";
        split.appendChild(seg);
      }
      node.appendChild(split);
    }
    return node;
  }

  function ariaLabel(n) {
    const share = fmtPercent(percentOf(value(n), value(tree.root))) || "0%";
    const loc = n.frame ? ", " + where(n) : "";
    return label(n) + loc + ", " + (fmtSeconds(n.py + n.nat + n.sys, true) || "0 s") + " CPU, " + share + " of the graph";
  }

  function showTip(n, x, y) {
    const cpu = n.py + n.nat + n.sys;
    const rough = n.samples < ctx.minSamples;
    const rows = [
      ["CPU", secondsAndShare(cpu, ctx.total, rough, n.samples)],
      ["Python", fmtSeconds(n.py, true) || "0 s", "python"],
      ["native", fmtSeconds(n.nat, true) || "0 s", "native"],
      ["system", fmtSeconds(n.sys, true) || "0 s", "system"],
      ["wait", fmtSeconds(n.wait, true) || "0 s", "wait"],
      ["samples", fmtCount(n.samples) + (rough ? " (rough)" : "")],
      ["share", (fmtPercent(percentOf(value(n), value(tree.root))) || "0%") + " of the graph"],
    ];
    if (state.zoom !== tree.root) rows.push(["", (fmtPercent(percentOf(value(n), value(state.zoom))) || "0%") + " of the zoomed frame"]);
    const list = el("dl");
    for (const [k, v, kind] of rows) list.append(el("dt", null, kind ? swatch(kind) : null, k), el("dd", { text: v }));
    const loc = n.frame ? where(n) : (Array.isArray(profile.stacks) ? profile.stacks.length : 0) + " stacks";
    tip.replaceChildren(el("div", { class: "fn", text: label(n) }), el("div", { class: "loc", text: loc }), list);
    tip.hidden = false;
    const pad = 14;
    const r = tip.getBoundingClientRect();
    let left = x + pad;
    let top = y + pad;
    if (left + r.width > window.innerWidth - 8) left = Math.max(8, x - r.width - pad);
    if (top + r.height > window.innerHeight - 8) top = Math.max(8, y - r.height - pad);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  function secondsAndShare(seconds, whole, rough, samples) {
    const text = (fmtSeconds(seconds, true) || "0 s") + " · " + (fmtPercent(percentOf(seconds, whole)) || "0%") + " of all";
    return rough && seconds > 0 ? ROUGH + text + " (±" + (fmtSeconds(plusMinus(seconds, samples), true) || "<0.01 s") + ")" : text;
  }

  function hideTip() {
    tip.hidden = true;
  }

  function nodeOf(target) {
    const frame = target && target.closest ? target.closest(".fg-frame") : null;
    if (!frame) return undefined;
    const id = frame.getAttribute("data-node") || "";
    return drawn.get(id.startsWith("fold-") ? id : Number(id));
  }

  function focusNode(id) {
    const item = drawn.get(id);
    if (!item) return;
    for (const other of drawn.values()) other.el.tabIndex = -1;
    item.el.tabIndex = 0;
    state.focus = id;
    item.el.focus();
  }

  function activate(item) {
    if (item.fold) zoomTo(item.node);
    else if (item.node === state.zoom && item.node !== tree.root) zoomTo(item.node.parent || tree.root);
    else zoomTo(item.node);
  }

  box.addEventListener("click", (e) => {
    const item = nodeOf(e.target);
    if (item) activate(item);
  });
  box.addEventListener("mousemove", (e) => {
    const item = nodeOf(e.target);
    if (item && !item.fold) showTip(item.node, e.clientX, e.clientY);
    else hideTip();
  });
  box.addEventListener("mouseleave", hideTip);
  box.addEventListener("focusin", (e) => {
    const item = nodeOf(e.target);
    if (!item || item.fold) return;
    const r = item.el.getBoundingClientRect();
    showTip(item.node, Math.max(r.left, 0) + Math.min(r.width, 40), r.bottom - 8);
  });
  box.addEventListener("focusout", hideTip);
  box.addEventListener("keydown", (e) => {
    const item = nodeOf(e.target);
    if (!item) return;
    const n = item.node;
    let next = null;
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      activate(item);
      return;
    }
    if (e.key === "Escape") {
      if (state.zoom !== tree.root) zoomTo(tree.root);
      else hideTip();
      e.preventDefault();
      return;
    }
    if (e.key === "ArrowUp" && item.fold) next = drawn.get(n.id);
    else if (e.key === "ArrowUp" && n.parent) next = drawn.get(n.parent.id) || drawn.get(tree.root.id);
    else if (e.key === "ArrowDown") next = (rows[item.row + 1] || []).find((c) => (c.fold ? c.node === n : c.node.parent === n));
    else if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
      const row = rows[item.row] || [];
      const at = row.indexOf(item);
      next = row[at + (e.key === "ArrowLeft" ? -1 : 1)];
    } else if (e.key === "Home") next = drawn.get(state.zoom.id);
    if (next) {
      e.preventDefault();
      focusNode(next.fold ? "fold-" + next.node.id : next.node.id);
    }
  });

  let pending = 0;
  window.addEventListener("resize", () => {
    if (pending) return;
    pending = requestAnimationFrame(() => {
      pending = 0;
      const focused = document.activeElement && box.contains(document.activeElement);
      render();
      if (focused) focusNode(state.focus);
    });
  });

  const legend = el(
    "p",
    { class: "fg-legend" },
    el("span", null, el("span", { class: "swatch prof", "aria-hidden": "true" }), "profiled code"),
    el("span", null, el("span", { class: "swatch lib", "aria-hidden": "true" }), "libraries and other code"),
    el("span", null, "stripe: ", swatch("python"), "Python ", swatch("native"), "native ", swatch("system"), "system"),
    el("span", { text: "Click a frame to zoom in, the top bar to zoom out; keys: arrows, Enter, Escape." }),
  );
  return { toolbar: toolbar, box: box, tip: tip, legend: legend, render: render, tree: tree };
}
