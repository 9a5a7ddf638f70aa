/* asyncio tasks: each task's time suspended at awaits (the profile's `tasks`), longest first;
 * no card when no task awaited. */
function tasksCard(profile) {
  const tasks = (Array.isArray(profile.tasks) ? profile.tasks : []).filter((t) => num(t.await_s) > 0);
  if (!tasks.length) return null;
  const columns = [
    { key: "task", label: "task", text: true, value: (t) => String(t.name), cell: (t) => String(t.name), cls: "text brk" },
    { key: "coroutine", label: "coroutine", text: true, value: (t) => String(t.coroutine || ""), cell: (t) => String(t.coroutine || ""), cls: "text brk", grow: true },
    {
      key: "await",
      label: "await",
      title: "time the task spent suspended at awaits (async for and async with included)",
      head: el("span", { class: "swatch-head k-await", "aria-hidden": "true" }),
      value: (t) => num(t.await_s),
      cell: (t) => fmtSeconds(num(t.await_s)),
      cls: "num await",
    },
  ];
  const table = sortableTable(columns, tasks, { name: "tasks", caption: "asyncio tasks", sort: { key: "await", dir: "descending" } });
  const sub = fmtCount(tasks.length) + " tasks; each await line's time is in the line tables' await column";
  return el("section", { class: "card", id: "tasks", "aria-labelledby": "tasks-h" }, el("div", { class: "card-head" }, el("h2", { id: "tasks-h", text: "asyncio tasks" }), el("span", { class: "sub", text: sub })), table.node);
}
