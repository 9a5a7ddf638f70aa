/* The GPU part of the report (docs/gpu.md): a line's GPU utilisation and GPU memory while
 * it ran and its CUDA copies, and a card with the run's GPU figures, its CUDA copies by
 * direction and its GPU memory over time. Shown only for profiles with GPU figures
 * (gpu_profiled) or CUDA copies (cuda_*_mb). */

function fmtUtil(pct) {
  const v = num(pct);
  if (!(v > 0)) return "";
  return v < 0.5 ? "<1%" : v.toFixed(0) + "%";
}

const CUDA_DIRECTIONS = [
  ["htod", "host \u2192 GPU"],
  ["dtoh", "GPU \u2192 host"],
  ["dtod", "GPU \u2192 GPU"],
];
function hasCudaCopies(r) {
  return CUDA_DIRECTIONS.some(([d]) => typeof r["cuda_" + d + "_mb"] === "number");
}
function cudaCopiedMB(r) {
  return CUDA_DIRECTIONS.reduce((sum, [d]) => sum + num(r["cuda_" + d + "_mb"]), 0);
}

/* The GPU columns of a table, when its rows carry GPU figures or CUDA copies (those only
 * in memory profiles: `mem` holds the run's elapsed time). */
function gpuColumns(rows, mem) {
  const columns = [];
  if (rows.some((r) => typeof r.gpu_util_pct === "number")) {
    columns.push(
      { key: "gpu", label: "GPU%", title: "the GPU's utilisation while the line ran", value: (r) => num(r.gpu_util_pct), cell: (r) => fmtUtil(r.gpu_util_pct), cls: "num gpu-col" },
      { key: "gpumem", label: "GPU mem", title: "GPU memory in use while the line ran (mean)", value: (r) => num(r.gpu_mem_mb), cell: (r) => fmtMB(r.gpu_mem_mb), cls: "num gpu-col" },
    );
  }
  if (mem && rows.some(hasCudaCopies)) {
    const rate = (r) => (mem.elapsed > 0 ? cudaCopiedMB(r) / mem.elapsed : 0);
    columns.push({ key: "gpucopy", label: "GPU copy", title: "MB copied per second of the run to, from and between GPUs (CUDA)", value: rate, cell: (r) => fmtRate(rate(r)), cls: "num gpu-col" });
  }
  return columns;
}

function gpuKpi(label, value, title) {
  return el("div", { class: "kpi gpu", title: title || null }, el("div", { class: "label", text: label }), el("div", { class: "value" }, value));
}

/* The run's CUDA copies by direction: MB, and MB/s of the run. */
function cudaCopies(profile) {
  const elapsed = num(profile.elapsed_s);
  const kpis = CUDA_DIRECTIONS.map(([d, label]) => {
    const mb = num(profile["cuda_" + d + "_mb"]);
    return gpuKpi(label, fmtMB(mb) || "0 MB", (fmtRate(elapsed > 0 ? mb / elapsed : 0) || "0 MB/s") + " over the run, through the CUDA library's copy calls");
  });
  return el("div", { class: "kpis", "data-kpis": "cuda-copies" }, ...kpis);
}

/* GPU memory in use over the run, drawn as the footprint chart is. */
function gpuMemoryChart(profile) {
  const tl = timelineOf(profile.gpu_timeline);
  const figure = el("figure", { class: "fp", "data-chart": "gpu-memory" });
  if (!tl.length) {
    figure.appendChild(el("p", { class: "note", text: "No GPU memory was read." }));
    return figure;
  }
  const elapsed = Math.max(num(profile.elapsed_s), tl[tl.length - 1][0]);
  const maxMB = Math.max(num(profile.gpu_peak_mem_mb), ...tl.map((p) => p[1]), 0);
  const path = stepPath(tl, elapsed, maxMB, CHART_W, CHART_H);
  const label = "GPU memory in use over the run, up to " + (fmtMB(maxMB) || "0 MB");
  const chart = svg(
    "svg",
    { class: "fp-svg", viewBox: "0 0 " + CHART_W + " " + CHART_H, preserveAspectRatio: "none", role: "img", "aria-label": label },
    svgTitle(label),
    svg("path", { class: "fp-area", d: path.area }),
    svg("path", { class: "fp-line", d: path.line }),
  );
  append(
    figure,
    el("div", { class: "fp-y", "aria-hidden": "true" }, el("span", { text: fmtMB(maxMB) || "0 MB" }), el("span", { text: fmtMB(maxMB / 2) }), el("span", { text: "0" })),
    el("div", { class: "fp-plot" }, chart),
    el("div", { class: "fp-x", "aria-hidden": "true" }, el("span", { text: "0 s" }), el("span", { text: "" }), el("span", { text: fmtSeconds(elapsed, true) || "0 s" })),
    el("figcaption", null, "GPU memory in use over the run, all devices together; max " + (fmtMB(maxMB) || "0 MB") + "."),
  );
  return figure;
}

/* The run's GPU figures, per device, what they stand for, and the memory chart. */
function gpuCard(profile) {
  const copies = hasCudaCopies(profile) ? cudaCopies(profile) : null;
  if (profile.gpu_profiled !== true) {
    if (!copies) return null;
    return el("section", { class: "card", id: "gpu", "aria-labelledby": "gpu-h" }, el("div", { class: "card-head" }, el("h2", { id: "gpu-h", text: "GPU copies" }), el("span", { class: "sub", text: "MB = 10\u2076 bytes" })), copies);
  }
  const kpi = gpuKpi;
  const devices = Array.isArray(profile.gpu_devices) ? profile.gpu_devices : [];
  const kpis = el(
    "div",
    { class: "kpis", "data-kpis": "gpu" },
    kpi("utilisation", fmtUtil(profile.gpu_util_pct) || "0%", "the GPU's mean utilisation while it was read"),
    kpi("peak memory", fmtMB(profile.gpu_peak_mem_mb) || "0 MB", "the most GPU memory in use in one reading"),
    kpi("GPU-busy", fmtSeconds(num(profile.gpu_busy_s), true) || "0 s", "utilisation times time, summed over the devices"),
  );
  const list = el("ul", { class: "gpu-devices" });
  for (const d of devices) {
    list.appendChild(el("li", { text: String(d.name || "GPU " + d.index) + ": " + (fmtUtil(d.util_pct) || "0%") + " busy on average, " + (fmtMB(d.peak_mem_mb) || "0 MB") + " at most in use" }));
  }
  const notes = [];
  if (profile.gpu_per_process !== true) {
    notes.push(el("p", { class: "note", text: "These are the whole device's figures: the driver gives no per-process figures, so other processes' work on the GPU is included." }));
  }
  if (typeof profile.gpu_note === "string" && profile.gpu_note) notes.push(el("p", { class: "note", text: profile.gpu_note }));
  return el(
    "section",
    { class: "card", id: "gpu", "aria-labelledby": "gpu-h" },
    el("div", { class: "card-head" }, el("h2", { id: "gpu-h", text: "GPU" }), el("span", { class: "sub", text: "MB = 10\u2076 bytes" })),
    kpis,
    list,
    ...notes,
    copies,
    gpuMemoryChart(profile),
  );
}
