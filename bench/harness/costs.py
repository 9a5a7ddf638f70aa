"""The cost model (costs/measure.py) run with the bench's interpreter, where spyglass is
installed: its figures and its rendered table go into the results."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

from . import env

SCRIPT = env.BENCH_DIR / "costs" / "measure.py"


def measure(python: Path, reps: int, smoke: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="spyglass-bench-costs-") as tmp:
        out = Path(tmp) / "costs.json"
        cmd = [str(python), str(SCRIPT), "--json", str(out)]
        cmd += ["--smoke"] if smoke else ["--reps", str(reps)]
        env.log("cost model: " + " ".join(cmd[1:]))
        done = subprocess.run(cmd, capture_output=True, text=True, env=env.child_env())
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            return {"ok": False, "reason": " / ".join(tail) or f"exit {done.returncode}"}
        return {"ok": True, "figures": json.loads(out.read_text()), "table": done.stdout}
