"""A benchmark's measuring part run on a checkout's slotwise (its
``python/``) in a fresh interpreter: two versions compared alternated in
one run, since timings here move 15-30% between runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_on(python_dir: Path, script: str, argv: list[str]):
    """``script argv`` with ``python_dir`` first on the path: what its last
    line prints, as JSON. Exits with the child's error if it fails."""
    env = {**os.environ, "PYTHONPATH": str(python_dir)}
    done = subprocess.run([sys.executable, str(Path(script).resolve()), *argv], env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"{Path(script).name}: the run on {python_dir} failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
