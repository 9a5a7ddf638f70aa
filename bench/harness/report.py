"""The markdown report: every number comes from the results file (see stats.py)."""

from __future__ import annotations

from . import instructions, stats

STARTUP_SCRIPTS = {"empty": "an empty script", "short": "one that sleeps 0.2 s (`short`)"}


def _ratio(cell: dict) -> str:
    if "median" not in cell:
        return "timeout" if cell.get("timed_out") else "fail"
    text = f"{cell['median']:.2f}× ({cell['min']:.2f}–{cell['max']:.2f})"
    if cell["n"] < cell["runs"]:
        text += f" [{cell['n']}/{cell['runs']} ok]"
    return text


def _cpu_ratio(cell: dict) -> str:
    if "cpu_ratio" not in cell:
        return _ratio(cell).split(" ")[0]
    if "cpu_min" not in cell:  # a results file from before the spread was kept
        return f"{cell['cpu_ratio']:.2f}×"
    return f"{cell['cpu_ratio']:.2f}× ({cell['cpu_min']:.2f}–{cell['cpu_max']:.2f})"


def _bytes(n: float | None) -> str:
    if n is None:
        return "—"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _own(cell: dict) -> str:
    v = cell.get("error_own_run_pp")
    return "n/a" if "na" in cell else ("—" if v is None else f"{v:.1f}")


def _load(values: list[float] | None) -> str:
    return " ".join(f"{v:.2f}" for v in values) if values else "?"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


class Report:
    def __init__(self, results: dict):
        self.r = results
        self.s = results["summary"]
        self.profs = results["profilers"]
        self.marks: list[str] = []
        self.failures: list[str] = []

    def label(self, p: dict) -> str:
        if p.get("mark"):
            if p["mark"] not in self.marks:
                self.marks.append(p["mark"])
            return p["label"] + "*" * (self.marks.index(p["mark"]) + 1)
        return p["label"]

    def fail(self, where: str, key: str, reason: str | None) -> None:
        line = f"- {where}, {key}: {reason or 'unknown'}"
        if line not in self.failures:
            self.failures.append(line)

    def header(self) -> list[str]:
        e, r = self.r["environment"], self.r
        versions = ", ".join(f"{k} {v}" for k, v in e["versions"].items() if v)
        lines = [
            f"# spyglass benchmark: {r['mode']} run, {e['date']}",
            "",
            f"- machine: {e['cpu_model']}, {e['cores']} cores, {e['platform']}",
            f"- python: {e['python']} ({e['python_executable']}); repository commit: "
            f"{e['repo_commit'] or 'none'}",
            f"- versions: {versions}",
            f"- load average (1/5/15 min) at start: {_load(e['loadavg_at_start'])}, at end: "
            f"{_load(r.get('loadavg_at_end'))}",
            f"- wall time of this run: {r['elapsed_s'] / 60:.1f} min; seed {r['config']['seed']}",
        ]
        sg = r["install"]["spyglass"]
        lines.append(
            "- spyglass: installed from the repository"
            if sg["ok"]
            else f"- spyglass: **not usable**: {sg['reason']}"
        )
        return [*lines, ""]

    def overhead(self) -> list[str]:
        ov = self.s.get("overhead")
        if not ov:
            return []
        o = self.r["overhead"]
        cols = [p for p in self.profs if p["key"] != "none"]
        lines = [
            "## Overhead (wall time relative to plain python)",
            "",
            f"Wall time of each profiled run ÷ the median wall time of the plain runs of "
            f"the workload: median over {o['repetitions']} interleaved repetitions, with the "
            "min–max range. Each workload does a fixed amount of work, calibrated to "
            f"~{o['duration_s']} s in plain python (the python column: median wall time, "
            "start-up included). `timeout`: killed after 15 s + 10× the plain time.",
            "",
        ]
        if o.get("pinned_cpu") is not None:
            parallel = ", ".join(f"`{n}`" for n in o.get("parallel", []))
            lines += [
                f"Every run of a workload that uses one CPU ran pinned to CPU {o['pinned_cpu']}"
                " (the harness on the others): the profiler's own threads and processes share "
                "it with the program, so the ratio is the whole cost of profiling"
                + (f"; {parallel} ran on every CPU." if parallel else "."),
                "",
            ]
        rows = []
        for name, row in ov["workloads"].items():
            plain = row["_plain_wall_s"]
            cells = [name, f"{plain:.2f} s" if plain else "fail"]
            for p in cols:
                cell = row[p["key"]]
                cells.append(_ratio(cell))
                if cell.get("failure"):
                    self.fail(f"overhead/{name}", p["key"], cell["failure"])
            rows.append(cells)
        last = ["**median over workloads**", ""]
        for p in cols:
            c = ov["overall"][p["key"]]
            text = "fail" if c["median"] is None else f"**{c['median']:.2f}×**"
            last.append(text + ("" if c["n"] == c["of"] else f" ({c['n']}/{c['of']})"))
        rows.append(last)
        lines += _table(["workload", "python"] + [self.label(p) for p in cols], rows)
        lines += self.cpu_table(ov, cols)
        variants = {
            n: row["_calibration"].get("variant")
            for n, row in ov["workloads"].items()
            if row["_calibration"].get("variant")
        }
        for n, v in variants.items():
            lines.append(f"Workload `{n}` ran its `{v}` variant.")
        return [*lines, ""] if variants else lines

    def _startup_cell(self, cell: dict, where: str, key: str) -> str:
        if "median" not in cell:
            self.fail(where, key, cell.get("failure"))
            return "fail"
        ms = [cell[k] * 1000 for k in ("median", "min", "max")]
        text = f"{ms[0]:+.0f} ms ({ms[1]:+.0f}…{ms[2]:+.0f})"
        if cell["n"] < cell.get("runs", cell["n"]):
            self.fail(where, key, cell.get("failure"))
            text += f" [{cell['n']}/{cell['runs']} ok]"
        return text

    def cpu_table(self, ov: dict, cols: list[dict]) -> list[str]:
        """CPU time (user + system of the whole process tree) relative to plain python."""
        lines = [
            "CPU time (user + system, the profiler's own processes and threads included) "
            "relative to plain python, median over repetitions with the min–max range: less "
            "sensitive than wall time to other load on a shared machine.",
            "",
        ]
        rows = []
        for name, row in ov["workloads"].items():
            cells = [row[p["key"]] for p in cols]
            rows.append([name] + [_cpu_ratio(c) for c in cells])
        last = ["**median over workloads**"]
        for p in cols:
            b = ov["overall"][p["key"]].get("cpu_ratio")
            last.append("fail" if b is None else f"**{b:.2f}×**")
        rows.append(last)
        return lines + _table(["workload"] + [self.label(p) for p in cols], rows)

    def own_threads(self) -> list[str]:
        """The CPU of the threads each profiler adds to the program's process."""
        ot = self.s.get("own_threads")
        if not ot:
            return []
        cols = [p for p in self.profs if p["key"] in ot["overall"]]
        lines = [
            "## Profilers' threads in the program's process",
            "",
            "CPU time of the threads a profiler adds to the program's process (read by the "
            "workload from the kernel's per-thread clocks as its work ends), as a percentage "
            "of plain python's median CPU time for the workload: median over repetitions "
            "with the min–max range. Steadier than the ratios above, since the kernel counts "
            "these threads' time exactly whatever else the machine runs; it leaves out what "
            "a profiler costs on the program's own thread (signal handlers, allocator hooks) "
            "and in other processes (py-spy's is one).",
            "",
        ]
        rows = []
        for name, row in ot["workloads"].items():
            cells = [name]
            for p in cols:
                c = row.get(p["key"])
                cells.append(
                    "—"
                    if c is None
                    else f"{100 * c['median']:.2f} % ({100 * c['min']:.2f}–{100 * c['max']:.2f})"
                )
            rows.append(cells)
        rows.append(
            ["**median over workloads**"]
            + [f"**{100 * ot['overall'][p['key']]['median']:.2f} %**" for p in cols]
        )
        lines += _table(["workload"] + [self.label(p) for p in cols], rows)
        for p in cols:
            names: dict[str, list[float]] = {}
            for row in ot["workloads"].values():
                for n, v in row.get(p["key"], {}).get("by_name", {}).items():
                    names.setdefault(n, []).append(v)
            shown = {n: stats.median(v) for n, v in sorted(names.items())}
            shown = {n: v for n, v in shown.items() if v is not None and v >= 0.00005}
            if shown:
                parts = ", ".join(f"`{n}` {100 * v:.2f} %" for n, v in shown.items())
                lines += [f"{self.label(p)}, by thread (median over workloads): {parts}.", ""]
        return lines

    def startup(self) -> list[str]:
        st = self.s.get("startup")
        if not st:
            return []
        scripts = [s for s in ("empty", "short") if s in st]
        children = self.s.get("per_child")
        plain = ", ".join(f"{st[s]['none']['plain_median_s'] * 1000:.0f} ms ({s})" for s in scripts)
        lines = [
            "## Start-up time",
            "",
            f"Start-up: median over {self.r['startup']['repetitions']} repetitions of "
            "(profiled − plain) wall time (min–max), on "
            + " and on ".join(STARTUP_SCRIPTS[s] for s in scripts)
            + f"; plain python takes {plain}.",
        ]
        if children:
            per = children["none"]["plain_per_child_s"]
            lines[-1] += (
                f" Per child: a script that starts {children['children']} `python -c pass` "
                "children one after the other (`children`), profiled, less the same plain, "
                "less the empty script's figure (the profiler's own start-up), ÷ "
                f"{children['children']}: what profiling adds to each Python child process "
                + (f"(plain python: {per * 1000:.0f} ms per child)." if per else ".")
            )
        lines.append("")
        rows = []
        for p in self.profs:
            if p["key"] == "none":
                continue
            cells = [self._startup_cell(st[s][p["key"]], f"startup/{s}", p["key"]) for s in scripts]
            if children:
                cells.append(self._startup_cell(children[p["key"]], "startup/child", p["key"]))
            rows.append([self.label(p), *cells])
        header = ["profiler"] + [f"start-up added ({s})" for s in scripts]
        if children:
            header.append("added per child")
        return lines + _table(header, rows)

    def profile_size(self) -> list[str]:
        size = self.s.get("profile_size")
        if not size:
            return []
        got = size["bytes"]
        goal = size["goal_bytes"]
        lines = [
            "## Profile size",
            "",
            f"Median size of the profile each profiler writes for the `{size['workload']}` "
            "workload (`—`: none written).",
            "",
        ]
        full, scalene = got.get("spyglass-full"), got.get("scalene-full")
        labels = {p["key"]: self.label(p) for p in self.profs}
        if "spyglass-full" in got:
            verdict = "not measured" if full is None else ("met" if full <= goal else "missed")
            lines.append(
                f"{labels['spyglass-full']}: {_bytes(full)}, Scalene (full): "
                f"{_bytes(scalene) if 'scalene-full' in got else 'not run'}; goal for spyglass "
                f"(full): at most {_bytes(goal)}, **{verdict}**."
            )
        lines.append("")
        rows = [[self.label(p), _bytes(got.get(p["key"]))] for p in self.profs if p["key"] in got]
        return lines + _table(["profiler", f"profile size ({size['workload']})"], rows)

    def _acc_cell(self, where: str, key: str, cell: dict, signed: bool = False) -> str:
        if "na" in cell:
            return "n/a"
        if "error_pp" not in cell:
            self.fail(where, key, cell.get("failure"))
            return "fail"
        if signed:
            return f"{cell['signed_error_pp']:+.1f}"
        return f"{cell['error_pp']:.1f}"

    def accuracy(self) -> list[str]:
        if "split" not in self.s:
            return []
        acc = self.r["accuracy"]
        cols = [p for p in self.profs if p["key"] != "none"]
        na: dict[str, str] = {}
        sp = self.s["split"]
        lines = [
            "## Accuracy against ground truth",
            "",
            f"Medians over {acc['repetitions']} repetition(s). The truth is what the program "
            "measured about itself (time.thread_time) in plain runs, without a profiler: "
            "a profiler that slows some code down more than other code is wrong by that "
            "much too. The *own run* columns compare with what the program measured about "
            "itself under that profiler instead, which isolates attribution errors.",
            "",
            f"### Python/native split (true Python share: {100 * sp['truth']:.1f} %)",
            "",
        ]
        rows = []
        for p in cols:
            c = sp["profilers"][p["key"]]
            if "na" in c:
                na[p["label"]] = c["na"]
            pf = c.get("per_function", {})
            share = f"{100 * c['reported']:.1f} %" if "reported" in c else "—"
            fn = [
                f"{max(0.0, 100 * pf[k]):.0f} %" if pf.get(k) is not None else "—"
                for k in ("py_work", "native_work")
            ]
            rows.append([self.label(p), share, self._acc_cell("split", p["key"], c), _own(c), *fn])
        lines += _table(
            [
                "profiler",
                "reported Python share",
                "abs. error (points)",
                "… vs own run",
                "Python share of py_work (truth ≈100 %)",
                "… of native_work (truth ≈0 %)",
            ],
            rows,
        )
        lines += [
            "### Function bias (Scalene paper §6.2)",
            "",
            "Signed error in points of the share each profiler gives `call_loop` (+ its "
            "`helper`) against `inline_loop`, which computes the same thing inline.",
            "",
        ]
        rows = []
        abs_errors: dict[str, list[float]] = {p["key"]: [] for p in cols}
        own_errors: dict[str, list[float]] = {p["key"]: [] for p in cols}
        for f, b in self.s["bias"].items():
            row = [f"{f} (true {100 * b['truth']:.1f} %)"]
            for p in cols:
                c = b["profilers"][p["key"]]
                row.append(self._acc_cell(f"bias {f}", p["key"], c, signed=True))
                if "error_pp" in c:
                    abs_errors[p["key"]].append(c["error_pp"])
                if c.get("error_own_run_pp") is not None:
                    own_errors[p["key"]].append(c["error_own_run_pp"])
                if "na" in c:
                    na[p["label"]] = c["na"]
            rows.append(row)
        mean_row, own_row = ["**mean abs. error**"], ["mean abs. error vs own run"]
        for p in cols:
            e, o = abs_errors[p["key"]], own_errors[p["key"]]
            mean_row.append(f"**{sum(e) / len(e):.1f}**" if e else "n/a")
            own_row.append(f"{sum(o) / len(o):.1f}" if o else "n/a")
        rows += [mean_row, own_row]
        lines += _table(["target call_loop share"] + [self.label(p) for p in cols], rows)
        th = self.s["threads"]
        lines += [
            "### Threads",
            "",
            f"Share of CPU time attributed to `worker`, run by {2} threads while the main "
            f"thread only waits (true share: {100 * th['truth']:.1f} %).",
            "",
        ]
        rows = []
        for p in cols:
            c = th["profilers"][p["key"]]
            share = f"{100 * c['reported']:.1f} %" if "reported" in c else "—"
            rows.append([self.label(p), share, self._acc_cell("threads", p["key"], c)])
        lines += _table(["profiler", "reported worker share", "abs. error (points)"], rows)
        lines += self._short_threads()
        if na:
            lines += ["n/a:"] + [f"- {k}: {v}" for k, v in na.items()] + [""]
        return lines

    def _short_threads(self) -> list[str]:
        st = self.s.get("short_threads")
        if not st:
            return []
        lines = [
            "### Short-lived threads",
            "",
            "Share of CPU time attributed to `slow_digest`, the handler of a thread-per-request "
            "HTTP server: every request runs in a thread of a few milliseconds (true share: "
            f"{100 * st['truth']:.1f} %, as the program's threads measured themselves).",
            "",
        ]
        rows = []
        for p in self.profs:
            if p["key"] == "none" or p["key"] not in st["profilers"]:
                continue
            c = st["profilers"][p["key"]]
            share = f"{100 * c['reported']:.1f} %" if "reported" in c else "—"
            rows.append(
                [self.label(p), share, self._acc_cell("short threads", p["key"], c, signed=True)]
            )
        return lines + _table(["profiler", "reported share", "error (points)"], rows)

    def footprint(self) -> list[str]:
        fp = self.s.get("footprint")
        if not fp:
            return []
        raw = self.r["footprint"]
        goals = raw["goals"]
        lines = [
            "## Profilers' own footprint",
            "",
            f"`workloads/wide.py` for {raw['duration_s']:.0f} s ({raw['repetitions']} "
            "repetition(s)): 25 files of 40 functions run by 600 threads, 20 at a time. Peak "
            "RSS is the largest process of the run (for spyglass, the program or the "
            "supervisor that merges its profile), medians. Goals for spyglass (full): at most "
            f"{goals['rss_added_mb']:.0f} MB added, a profile of at most "
            f"{goals['profile_kb']:.0f} KB.",
            "",
        ]
        rows = []
        for p in self.profs:
            c = fp.get(p["key"])
            if c is None:
                rows.append([self.label(p), "fail", "", ""])
                continue
            added = "" if p["key"] == "none" else f"{c['rss_added_mb']:+.1f} MB"
            size = f"{c['profile_kb']:.0f} KB" if c["profile_kb"] is not None else ""
            rows.append([self.label(p), f"{c['rss_mb']:.1f} MB", added, size])
        return lines + _table(["profiler", "peak RSS", "added", "profile"], rows)

    def instructions(self) -> list[str]:
        labels = {p["key"]: self.label(p) for p in self.profs}
        return instructions.render(self.r.get("instructions"), labels)

    def costs(self) -> list[str]:
        c = self.r.get("costs")
        if not c:
            return []
        if not c.get("ok"):
            self.failures.append(f"- cost model: {c.get('reason')}")
            return ["## Cost model", "", "fail (see Failures)", ""]
        return ["## Cost model", "", *c["table"].splitlines()[1:], ""]

    def render(self) -> str:
        body = self.header() + self.overhead() + self.own_threads()
        body += self.startup() + self.instructions()
        body += self.profile_size()
        body += self.footprint() + self.costs() + self.accuracy()
        cmds = ["## Commands", ""] + [f"- {p['label']}: `{p['command']}`" for p in self.profs]
        notes = [f"{'*' * (k + 1)} {m}" for k, m in enumerate(self.marks)]
        fails = ["## Failures", ""] + (self.failures or ["none"])
        return "\n".join(body + cmds + [""] + ([*notes, ""] if notes else []) + fails) + "\n"


def render(results: dict) -> str:
    results["summary"] = stats.summarize(results)
    return Report(results).render()
