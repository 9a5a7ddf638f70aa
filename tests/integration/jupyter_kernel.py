"""An IPython kernel of the interpreter running the tests, driven through jupyter_client
as a notebook front end drives it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

KERNEL_NAME = "spyglass-test-python"
KERNEL_TIMEOUT_S = 120


class Kernel:
    """An IPython kernel of this interpreter and a blocking client to it."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        # jupyter_core warns on import unless told which directory scheme to use.
        os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import KernelManager

        spec_dir = workdir / "kernels" / KERNEL_NAME
        spec_dir.mkdir(parents=True)
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "spyglass tests",
            "language": "python",
        }
        (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
        specs = KernelSpecManager(kernel_dirs=[str(workdir / "kernels")])
        self.manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
        self.manager.connection_file = str(workdir / "connection.json")
        kernel_env = dict(env)
        kernel_env["IPYTHONDIR"] = str(workdir / "ipython")  # not the user's profile
        self.manager.start_kernel(env=kernel_env, cwd=str(workdir))
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=KERNEL_TIMEOUT_S)
        # The forms of every object the last cell displayed (display_data, execute_result).
        self.displays: list[dict[str, Any]] = []

    def run(self, code: str) -> str:
        """Executes a cell; returns what it printed. An error in the cell fails the test."""
        printed: list[str] = []
        self.displays = []

        def output(msg: dict[str, Any]) -> None:
            content = msg["content"]
            if msg["msg_type"] == "stream":
                printed.append(content["text"])
            elif msg["msg_type"] == "error":
                printed.append("\n".join(content["traceback"]))
            elif msg["msg_type"] in ("display_data", "execute_result"):
                self.displays.append(content["data"])

        reply = self.client.execute_interactive(code, timeout=KERNEL_TIMEOUT_S, output_hook=output)
        status = reply["content"]["status"]
        assert status == "ok", f"cell failed ({status}):\n{code}\n{''.join(printed)}"
        return "".join(printed)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
