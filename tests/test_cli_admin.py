"""`slotwise diff` and `slotwise explain` against a real running web server:
the file named as the operator gave it, a refused token that says which file
was tried, every setting a reload would change, and an app the placement
policy rejected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse

import httpx
import pytest

from slotwise import protocol as wire
from webtools import ALLOCATIONS, TOKEN, web  # noqa: F401 (the fixture)

AUTH = {"Authorization": f"Bearer {TOKEN}"}
BROKEN = "<allocations>\n  <queue name='a'>\n    <weight>x</weight>\n  </queue>\n</allocations>\n"


def slotwise(*args, env=None):
    return subprocess.run([sys.executable, "-m", "slotwise.cli", *args], capture_output=True, text=True, timeout=60,
                          env=env)


@pytest.fixture
def token(tmp_path):
    path = tmp_path / "admin.token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return str(path)


def test_diff_names_the_file_it_was_given_in_the_errors(web, tmp_path, token):
    broken = tmp_path / "edits" / "BROKEN.xml"
    broken.parent.mkdir()
    broken.write_text(BROKEN)
    r = slotwise("diff", str(broken), "--server", web.url, "--admin-token-file", token)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"{broken}:3: weight in queue root.a must be a number"), r.stderr
    assert "allocations.xml" not in r.stderr  # not the file the server watches
    assert slotwise("validate", str(broken)).stderr == r.stderr  # as validate names it
    r = slotwise("diff", str(broken), "--server", web.url, "--admin-token-file", token, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["errors"][0].startswith(f"{broken}:3: ")


def test_the_dry_run_api_names_the_file_by_its_header(web):
    url = f"{web.url}/api/v1/config/dry-run"
    said = httpx.post(url, content=BROKEN, headers=AUTH).json()["errors"]
    assert said[0].startswith("the file sent:3: ")  # no name given: not the served file's
    name = urllib.parse.quote("mine/naïve\n\u202e.xml")
    said = httpx.post(url, content=BROKEN, headers={**AUTH, "X-Slotwise-File-Name": name}).json()["errors"]
    assert said[0].startswith("mine/naïve\\n\\u202e.xml:3: ")  # one line; nothing a terminal acts on
    r = httpx.post(url, content=BROKEN, headers={**AUTH, "X-Slotwise-File-Name": "a" * 1025})
    assert r.status_code == 400 and r.json()["detail"] == ("header X-Slotwise-File-Name: at most 1024 characters, "
                                                           "got 1025")
    assert httpx.post(url, content=BROKEN, headers={"X-Slotwise-File-Name": "a" * 1025}).status_code == 401
    spec = httpx.get(f"{web.url}/openapi.json").json()["paths"]["/api/v1/config/dry-run"]["post"]
    assert any(p["name"] == "X-Slotwise-File-Name" and p["in"] == "header" for p in spec["parameters"])


def test_a_refused_or_missing_token_names_the_file_tried(web, tmp_path):
    home = tmp_path / "home"
    default = home / ".config" / "slotwise" / "admin.token"
    new = tmp_path / "new.xml"
    new.write_text(ALLOCATIONS)
    env = {**os.environ, "HOME": str(home)}
    r = slotwise("diff", str(new), "--server", web.url, env=env)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == (f"slotwise diff: no admin token: {default} does not exist; give serve's token file with "
                        "--admin-token-file FILE (serve's log names it: \"admin token in FILE\")\n")
    default.parent.mkdir(parents=True)
    default.write_text("a-token-of-a-serve-long-gone\n")  # the default place, a stale token
    default.chmod(0o600)
    r = slotwise("diff", str(new), "--server", web.url, env=env)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"slotwise diff: the server at {web.url} refused the admin token in {default} ")
    assert "give serve's token file with --admin-token-file FILE" in r.stderr


def test_diff_shows_every_setting_a_reload_would_change(web, token, tmp_path):
    new = tmp_path / "new.xml"
    new.write_text(ALLOCATIONS.replace(
        '<queue name="research"/>',
        '<queue name="research"><minResources>3072 mb, 3 vcores</minResources>'
        '<minSharePreemptionTimeout>15</minSharePreemptionTimeout><maxRunningApps>4</maxRunningApps></queue>'))
    r = slotwise("diff", str(new), "--server", web.url, "--admin-token-file", token)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("root.research "))
    assert lines[at + 1:at + 4] == ["    min share (minResources): 0 MB, 0 vcores -> 3072 MB, 3 vcores",
                                    "    maxRunningApps: unlimited -> 4",
                                    "    minSharePreemptionTimeout: never -> 15 s"]
    assert lines[at + 4].startswith("root.") or not lines[at + 4].startswith("    ")
    # a queue whose settings stay gets no lines of them
    prod = next(i for i, line in enumerate(lines) if line.startswith("root.prod "))
    assert not lines[prod + 1].startswith("    ")
    out = json.loads(slotwise("diff", str(new), "--server", web.url, "--admin-token-file", token, "--json").stdout)
    research = next(q for q in out["queues"] if q["queue"] == "root.research")
    assert (research["min_share_timeout_before"], research["min_share_timeout_after"]) == (None, 15)
    assert research["min_share_after"] == {"memory_mb": 3072, "vcores": 3}


def test_explain_says_an_app_was_rejected_at_placement_and_why(web):
    answer = web.core.handle_place(wire.decode("PlaceRequest", json.dumps(
        {"app": "application_9_0007", "user": "dave", "queue": "root", "priority": 0})))
    assert answer.reject  # root is a parent: no app can be in it
    r = httpx.get(f"{web.url}/api/v1/apps/application_9_0007/explain")
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["state"] == "rejected" and out["queue"] is None and out["user"] == "dave" and out["holds"] == []
    assert out["rejected"]["reason"] == answer.reject and out["rejected"]["asked"] == "root"
    assert out["rejected"]["rules"][-1]["outcome"] == "rejected"
    r = slotwise("explain", "application_9_0007", "--server", web.url)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"application_9_0007, user dave: rejected at placement, never scheduled\n"
                        f"the placement policy rejected it when it was submitted: it asked for queue root; "
                        f"{answer.reject}\n")
    r = slotwise("explain", "application_9_0008", "--server", web.url)  # never heard of: still unknown
    assert r.returncode == 1 and "unknown app application_9_0008" in r.stderr


def test_diff_of_an_mrv1_pools_file_counts_slots():
    """A JobTracker's serve answers in map and reduce slots: the table says
    slots and each pool's changed minimums in both kinds."""
    from slotwise.admin import SchedulerService
    from slotwise.client import diff_table
    from slotwise.config.watcher import ConfigStatus
    from test_mrv1_core import POOLS_XML, call, job, make, tracker

    core, _ = make()
    nodes = [tracker(i, maps=2, reduces=2) for i in range(2)]
    call(core, "heartbeat", full=True, nodes=nodes, apps=[job(1, "prod", 8, 8)])
    call(core, "update")
    new = POOLS_XML.replace('<pool name="research"><weight>1</weight></pool>',
                            '<pool name="research"><weight>1</weight><minMaps>2</minMaps><minReduces>1</minReduces>'
                            '<maxRunningJobs>3</maxRunningJobs></pool>')
    out = SchedulerService(core, ConfigStatus("pools.xml")).dry_run(new, "new-pools.xml")
    assert out["valid"], out
    text = diff_table(out, "new-pools.xml").splitlines()
    assert text[0] == "new-pools.xml against the live demands (fair shares by the design document's rule; " \
                      "map+reduce slots):"
    at = next(i for i, line in enumerate(text) if line.startswith("root.research "))
    assert text[at + 1:at + 3] == [
        "    min share (minMaps, minReduces): 0 map slots, 0 reduce slots -> 2 map slots, 1 reduce slots",
        "    maxRunningJobs: unlimited -> 3"]
    assert SchedulerService(core, ConfigStatus("pools.xml")).dry_run("<allocations><pool name='a'><weight>x"
                                                                      "</weight></pool></allocations>",
                                                                      "new-pools.xml")["errors"][0] \
        .startswith("new-pools.xml:1: ")
