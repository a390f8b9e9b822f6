"""Tiers that must not pass by skipping: under .ci/run (SLOTWISE_REQUIRE_JAVA,
SLOTWISE_REQUIRE_BROWSER, SLOTWISE_REQUIRE_DOCKER) a missing JDK, chromium or
Docker engine fails its tier with a one-line reason; elsewhere the tests skip
and say why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REQUIRE = ("SLOTWISE_REQUIRE_JAVA", "SLOTWISE_REQUIRE_BROWSER", "SLOTWISE_REQUIRE_DOCKER")


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in REQUIRE}
    env.update(extra)
    return env


def test_ci_requires_every_tier_that_could_skip():
    """What .ci/run exports, as bash reads it."""
    out = subprocess.run(["bash", "-c", 'eval "$(grep -E "^export " .ci/run)"; env'], cwd=REPO,
                         capture_output=True, text=True, timeout=30, env=_env(), check=True).stdout
    exported = dict(line.split("=", 1) for line in out.splitlines() if line.startswith("SLOTWISE_REQUIRE_"))
    assert {k: exported.get(k) for k in REQUIRE} == {k: "1" for k in REQUIRE}


def test_the_ui_tests_skip_without_chromium_but_fail_in_one_line_when_required(tmp_path):
    missing = tmp_path / "no" / "chromium"
    cmd = [sys.executable, "-m", "pytest", "-q", "-rsf", "-p", "no:cacheprovider", "-p", "no:randomly",
           "tests/test_web_ui.py::test_queues_and_jobs_are_shown_and_refresh_themselves"]
    skipped = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300,
                             env=_env(SLOTWISE_CHROMIUM=str(missing)))
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout + skipped.stderr
    failed = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=_env(SLOTWISE_CHROMIUM=str(missing), SLOTWISE_REQUIRE_BROWSER="1"))
    assert failed.returncode == 1 and "1 error" in failed.stdout, failed.stdout + failed.stderr
    reason = [line for line in failed.stdout.splitlines() if "SLOTWISE_REQUIRE_BROWSER=1 requires it" in line]
    assert reason and f"no chromium at {missing}" in reason[0], failed.stdout
    assert "Traceback" not in failed.stdout and "def browser" not in failed.stdout  # the reason, not a trace


def test_the_docker_tier_fails_in_one_line_when_required_and_no_engine_can_run(tmp_path):
    """docker/test-tier.sh where setup-engine.sh finds no engine and may not
    start one (exit 3): not root (``id -u`` says 1000), ``docker`` answers
    nothing, and apt-get and dockerd fail, so nothing is installed or started
    whatever the script reads."""
    fake = tmp_path / "bin"
    fake.mkdir()
    scripts = {"id": '[ "$1" = -u ] && { echo 1000; exit 0; }\nexec /usr/bin/id "$@"',
               "docker": "exit 1", "dockerd": "exit 1", "apt-get": "exit 1"}
    for name, body in scripts.items():
        (fake / name).write_text(f"#!/bin/sh\n{body}\n")
        (fake / name).chmod(0o755)
    env = _env(SLOTWISE_REQUIRE_DOCKER="1", PATH=f"{fake}:{os.environ['PATH']}",
               SLOTWISE_DOCKER_STATE=str(tmp_path / "state"))
    r = subprocess.run(["bash", "docker/test-tier.sh"], cwd=REPO, capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == ("docker tier: FAILED: no Docker engine can run here (above), "
                                                 "and SLOTWISE_REQUIRE_DOCKER=1 requires it"), r.stdout + r.stderr
