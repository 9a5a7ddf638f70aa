/* spyglass HTML report: the per-test table of a test suite's profile (pytest --spyglass),
 * which the terminal report shows as its "tests by CPU" lines: every test, sortable. */

function testsCard(profile, ctx) {
  const tests = (Array.isArray(profile.tests) ? profile.tests : []).filter((t) => t && typeof t.nodeid === "string" && typeof t.wait_s === "number");
  if (tests.length === 0) return null;
  const tctx = { total: ctx.total, scale: maxOf(tests, cpuOf), minSamples: ctx.minSamples };
  const mb = (field, label, title) => ({
    key: field,
    label: label,
    title: title,
    value: (t) => (typeof t[field] === "number" ? t[field] : null),
    cell: (t) => (typeof t[field] === "number" ? fmtMB(t[field]) : ""),
    cls: "num",
  });
  const columns = [
    { key: "test", label: "test", text: true, value: (t) => t.nodeid, cell: (t) => t.nodeid, cls: "text brk", grow: true },
    {
      key: "outcome",
      label: "outcome",
      text: true,
      title: "passed, failed or skipped; over: the limits of its spyglass marker it went over",
      value: (t) => String(t.outcome || ""),
      cell: (t) => String(t.outcome || "") + (Array.isArray(t.over) && t.over.length ? " (over " + t.over.join(", ") + ")" : ""),
      cls: "text",
    },
    ...figureColumns(tests, tctx),
  ];
  if (tests.some((t) => typeof t.mem_alloc_mb === "number")) {
    columns.push(
      mb("mem_alloc_mb", "allocated", "what the test allocated, from the start of its setup"),
      mb("max_footprint_mb", "peak", "the test's peak footprint (sampled live allocations since its setup began)"),
      mb("copy_mb", "copied", "what the test copied"),
    );
  }
  if (tests.some((t) => typeof t.worker === "string")) {
    columns.push({ key: "worker", label: "worker", text: true, title: "the pytest-xdist worker that ran it", value: (t) => t.worker || null, cell: (t) => t.worker || "", cls: "text dim" });
  }
  const table = sortableTable(columns, tests, { name: "tests", caption: "Tests", sort: { key: "cpu", dir: "descending" } });
  const sub = fmtCount(tests.length) + (tests.length === 1 ? " test" : " tests") + ", each from the start of its setup to the end of its call";
  return el("section", { class: "card", id: "tests", "aria-labelledby": "tests-h" }, el("div", { class: "card-head" }, el("h2", { id: "tests-h", text: "Tests" }), el("span", { class: "sub", text: sub })), table.node);
}
