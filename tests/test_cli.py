"""The operator CLI, run as a real subprocess."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONF = ROOT / "conf"


def run(*args):
    return subprocess.run([sys.executable, "-m", "slotwise.cli", *args], capture_output=True, text=True,
                          cwd=ROOT)


def test_validate_accepts_the_example_files():
    files = ["allocations.xml", "hadoop-doc-example.xml", "mrv1-pools.xml"]
    r = run("validate", *(str(CONF / f) for f in files))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr == "" and [line.split(":")[0] for line in r.stdout.splitlines()] == [str(CONF / f) for f in files]
    assert all(": valid " in line for line in r.stdout.splitlines())
    quiet = run("validate", "-q", *(str(CONF / f) for f in files))
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == ""


def test_validate_reports_file_and_line(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<allocations>\n  <queue name=\"a\">\n    <weight>heavy</weight>\n"
                   "    <bogus>1</bogus>\n  </queue>\n</allocations>\n")
    r = run("validate", str(bad))
    assert r.returncode == 1 and r.stdout == f"{bad}: invalid, 1 error(s), 1 warning(s)\n"  # the verdict
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{bad}:3: ") and "weight" in lines[0]
    assert lines[1].startswith(f"{bad}:4: ") and "bogus" in lines[1]


def test_validate_reports_xml_syntax_errors(tmp_path):
    bad = tmp_path / "broken.xml"
    bad.write_text("<allocations>\n<queue name='a'>\n</allocations>\n")
    r = run("validate", str(bad))
    assert r.returncode == 1
    assert r.stdout == f"{bad}: invalid, 1 error(s)\n" and r.stderr.startswith(f"{bad}:")


def test_shares_json_yarn(tmp_path):
    f = tmp_path / "a.xml"
    f.write_text("<allocations><queue name='a'><weight>3</weight></queue><queue name='b'/></allocations>")
    r = run("shares", "--allocations", str(f), "--capacity", "100", "--demand", "a=90", "--demand", "b=90",
            "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["queue"]: row for row in json.loads(r.stdout)}
    assert rows["root.a"]["fair_share"] == 75 and rows["root.b"]["fair_share"] == 25
    assert rows["root.a"]["weight"] == 3 and rows["root.a"]["demand"] == 90
    assert {"queue", "weight", "min_share", "demand", "fair_share"} <= set(rows["root.b"])


def test_shares_by_either_rule_say_which_one():
    """A YARN file: YARN's rule unless --share-rule design (docs/fair-shares.md's worked example)."""
    args = ("shares", "--allocations", str(CONF / "allocations.xml"), "--capacity", "65536 mb, 64 vcores",
            "--demand", "prod=8192", "--demand", "research=60000")
    fair = {}
    for rule in ("auto", "yarn", "design"):
        r = run(*args, "--share-rule", rule)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[0].startswith(
            "fair shares by the design document's rule" if rule == "design" else "fair shares by YARN's rule")
        rows = {row["queue"]: row for row in json.loads(run(*args, "--share-rule", rule, "--json").stdout)}
        fair[rule] = (rows["root.prod"]["fair_share"], rows["root.research"]["fair_share"])
    assert fair["auto"] == fair["yarn"] == (43691, 21845)  # weights 2:1, whatever prod asks for
    assert fair["design"] == (8192, 57344)  # prod capped at its demand, the rest to research


def test_shares_of_the_over_commit_example_in_the_docs():
    args = ("shares", "--allocations", str(CONF.parent / "docs" / "examples" / "overcommit.xml"), "--capacity",
            "65536 mb, 64 vcores", "--demand", "etl=20480", "--demand", "bi=65536", "--demand", "adhoc=65536",
            "--demand", "batch=65536", "--json")
    out = {}
    for rule in ("yarn", "design"):
        r = run(*args, "--share-rule", rule)
        assert r.returncode == 0, r.stderr
        out[rule] = {row["queue"]: row["fair_share"] for row in json.loads(r.stdout)}
    assert out["yarn"] == {"root.adhoc": 0, "root.batch": 4096, "root.bi": 32768, "root.etl": 40960}
    assert out["design"] == {"root.adhoc": 8192, "root.batch": 4096, "root.bi": 32768, "root.etl": 20480}


def test_shares_mrv1_counts_map_slots():
    r = run("shares", "--allocations", str(CONF / "mrv1-pools.xml"), "--capacity", "100",
            "--demand", "production=80", "--demand", "research=80", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["queue"]: row for row in json.loads(r.stdout)}
    total = sum(row["fair_share"] for row in rows.values())
    assert abs(total - 100) < 1e-6
    assert rows["root.production"]["min_share"] > 0


def test_shares_text_table_and_bad_demand():
    r = run("shares", "--allocations", str(CONF / "allocations.xml"), "--capacity", "8192 mb, 8 vcores",
            "--demand", "research=4096 mb, 4 vcores")
    assert r.returncode == 0, r.stderr
    assert "root.research" in r.stdout and "fair_share" in r.stdout
    r = run("shares", "--allocations", str(CONF / "allocations.xml"), "--capacity", "10", "--demand", "oops")
    assert r.returncode == 2 and "QUEUE=AMOUNT" in r.stderr
    r = run("shares", "--allocations", str(CONF / "allocations.xml"), "--capacity", "10", "--demand", "nosuch=100")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("slotwise shares: --demand root.nosuch: no such queue in") and "root.research" in r.stderr


def test_shares_takes_a_new_child_of_a_parent_queue(tmp_path):
    f = tmp_path / "a.xml"
    f.write_text('<allocations>\n  <queue name="users" type="parent"/>\n  <queue name="b"/>\n</allocations>\n')
    r = run("shares", "--allocations", str(f), "--capacity", "100", "--demand", "users.ann=60", "--demand", "b=60",
            "--json")
    assert r.returncode == 0, r.stderr
    assert {row["queue"]: row["fair_share"] for row in json.loads(r.stdout)}["root.users.ann"] == 50


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`slotwise ... | head -1`: no BrokenPipeError traceback once head has its line."""
    (tmp_path / "g.xml").write_text("<allocations><queue name='a'/></allocations>\n")
    r = subprocess.run(f"{sys.executable} -m slotwise.cli validate {' '.join(['g.xml'] * 3000)} | head -1",
                       shell=True, capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert r.stdout == "g.xml: valid yarn allocation file, 1 queues\n", r.stdout
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


def test_validate_prints_warnings_and_strict_makes_them_fail(tmp_path):
    f = tmp_path / "fair-scheduler.xml"
    f.write_text("<allocations>\n  <queue name=\"a\">\n    <maxRunningJobs>3</maxRunningJobs>\n  </queue>\n"
                 "  <defaultSchedulingMode>fair</defaultSchedulingMode>\n</allocations>\n")
    r = run("validate", str(f))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.splitlines() == [
        f"{f}:3: warning: <maxRunningJobs> in queue root.a is an MRv1 element; a YARN file ignores it, as YARN "
        "does; did you mean <maxRunningApps>?",
        f"{f}:5: warning: unknown element <defaultSchedulingMode> in <allocations> is ignored, as YARN ignores it; "
        "did you mean <defaultQueueSchedulingMode>?"]
    assert r.stdout == f"{f}: valid yarn allocation file, 1 queues, 2 warning(s)\n"
    strict = run("validate", "--strict", str(f))
    assert strict.returncode == 1 and strict.stderr == r.stderr and "invalid under --strict" in strict.stdout


def test_help_says_what_slotwise_is_and_what_allocations_means():
    top = run("--help")
    assert top.returncode == 0 and "``" not in top.stdout and "drop-in Hadoop scheduler" in top.stdout
    for cmd in ("serve", "shares"):
        text = run(cmd, "--help").stdout
        assert "fair-scheduler.xml" in " ".join(text.split()), text
