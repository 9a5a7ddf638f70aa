/* spyglass HTML report: the call tree, the flame graph's tree (buildFlameTree) as an
 * outline: inclusive CPU with its Python / native / system split and wait on every call,
 * children by CPU, calls below min_percent of the CPU and of the wait left out, a chain of
 * more than TREE_CHAIN single calls folded into one line. Calls with at least TREE_OPEN
 * percent of the CPU start open. */

const TREE_CHAIN = 3;
const TREE_OPEN = 10;

function treeCard(profile, ctx) {
  const tree = buildFlameTree(profile, false).root;
  const cpuCut = (ctx.total * ctx.minPercent) / 100;
  const waitCut = (num(profile.wait_s) * ctx.minPercent) / 100;
  const cpu = (n) => n.py + n.nat + n.sys;
  let hidden = 0;
  const shown = (n) => {
    const kids = Array.from(n.children.values()).sort((a, b) => cpu(b) - cpu(a) || b.wait - a.wait);
    const keep = kids.filter((c) => (cpu(c) > 0 && cpu(c) >= cpuCut) || (c.wait > 0 && c.wait >= waitCut));
    hidden += kids.length - keep.length;
    return keep;
  };
  const line = (n) => {
    const lines = Array.from(n.lines.entries()).sort((a, b) => b[1] - a[1]);
    return n.frame && lines.length && !n.frame.folded && n.frame.file !== "<truncated>" ? shortPath(String(n.frame.file)) + ":" + lines[0][0] : "";
  };
  const label = (n) => (!n.frame ? "all stacks" : n.frame.file === "<truncated>" ? "(outer frames not recorded)" : String(n.frame.function));
  const head = (n, folded) => {
    const pct = percentOf(cpu(n), ctx.total);
    const split = KINDS.map((_k, i) => fmtPercent(percentOf([n.py, n.nat, n.sys][i], ctx.total)) || "0%").join(" / ");
    return [
      el("span", { class: "t-pct", title: "inclusive CPU: Python / native / system " + split }, fmtPercent(pct) || "0%"),
      cpuBar({ cpu_python_s: n.py, cpu_native_s: n.nat, cpu_system_s: n.sys }, ctx.total > 0 ? cpu(n) / ctx.total : 0, true),
      n.wait > 0 ? el("span", { class: "t-wait", text: fmtSeconds(n.wait) + " wait" }) : null,
      folded.length ? el("span", { class: "t-fold", text: "⋮ " + folded.length + " calls: " + Array.from(new Set(folded.map(label))).slice(0, 3).join(", ") }) : null,
      el("span", { class: n.frame && profiled.has(n.frame.file) ? "t-fn own" : "t-fn", text: label(n) }),
      el("span", { class: "t-loc", text: line(n) }),
    ];
  };
  const profiled = new Set(Object.keys(profile.files || {}));
  const item = (n, folded) => {
    const kids = shown(n);
    const li = el("li", { "data-call": label(n) });
    if (kids.length === 1) {
      const chain = [kids[0]];
      for (let next = shown(chain[0]); next.length === 1; next = shown(next[0])) chain.push(next[0]);
      if (chain.length > TREE_CHAIN) {
        const last = chain.pop();
        const inner = el("ul", null, item(last, chain));
        return append(li, el("details", { open: percentOf(cpu(n), ctx.total) >= TREE_OPEN }, el("summary", null, head(n, folded)), inner));
      }
    }
    if (!kids.length) return append(li, el("div", { class: "t-leaf" }, head(n, folded)));
    return append(li, el("details", { open: percentOf(cpu(n), ctx.total) >= TREE_OPEN }, el("summary", null, head(n, folded)), el("ul", null, kids.map((k) => item(k, [])))));
  };
  const root = el("ul", { class: "calltree", "data-tree": "" }, item(tree, []));
  const note = hidden ? el("p", { class: "more", text: "Calls below " + ctx.minPercent + "% of the CPU and of the wait are left out." }) : null;
  return el("section", { class: "card", id: "calltree", "aria-labelledby": "calltree-h" }, el("div", { class: "card-head" }, el("h2", { id: "calltree-h", text: "Call tree" }), el("span", { class: "sub", text: "inclusive time, callers above callees; click a call to open or close it" })), root, note);
}
