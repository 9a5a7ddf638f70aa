"""The supervisor the launcher starts without site (launcher/main.cpp) gets what site
would have given it when it needs it: runtime/launched.py's ensure_site."""

from __future__ import annotations

import os
import subprocess
import sys

import spyglass

_CHECK = """
import sys
sys.path.append({package_parent!r})
from spyglass.runtime import launched
before = 'site' in sys.modules
launched.ensure_site()  # the launcher did not say: nothing to do
untouched = 'site' not in sys.modules
import os
os.environ[launched.SITE_ENV] = {package_parent!r}
launched.take()
assert launched.site_left_out() and launched.SITE_ENV not in os.environ
launched.ensure_site()
import os, site
existing = [p for p in site.getsitepackages() if os.path.isdir(p)]
on_path = bool(existing) and all(p in sys.path for p in existing)
print(before, untouched, 'site' in sys.modules, on_path)
"""


def test_ensure_site_runs_site_only_where_the_launcher_left_it_out() -> None:
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(spyglass.__file__)))
    done = subprocess.run(
        [sys.executable, "-S", "-c", _CHECK.format(package_parent=package_parent)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", "True"], done.stdout


def test_a_users_own_minus_s_is_still_refused() -> None:
    """-S given by the user would reach the program (the supervisor passes its interpreter's
    options on): refused, as before the launcher left site out of its own start."""
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(spyglass.__file__)))
    env = dict(os.environ, PYTHONPATH=package_parent)
    env.pop("SPYGLASS_SUPERVISOR_SITE", None)
    done = subprocess.run(
        [sys.executable, "-S", "-m", "spyglass", "run", "--no-report", "-c", "pass"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    assert "needs the site module" in done.stderr, done.stderr
