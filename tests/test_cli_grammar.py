"""One grammar for every `slotwise` command: real metavars, a subcommand's
own usage on its errors, the same flag for the same thing (old names kept,
out of --help), errors on stderr and results on stdout."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from slotwise.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "slotwise.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def parsers(parser: argparse.ArgumentParser, path=("slotwise",)):
    """Every parser of the command tree, with its path."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def test_every_value_has_a_real_metavar():
    """No UPPER_CASE_DEST placeholder (argparse's default for an option
    that takes a value), no bare dest for a positional."""
    bad, seen = [], 0
    for path, parser in parsers(build_parser()):
        for a in parser._actions:
            if a.nargs == 0 or isinstance(a, argparse._SubParsersAction) or a.choices is not None:
                continue
            seen += 1
            shown = a.metavar or (a.dest.upper() if a.option_strings else a.dest)
            if a.metavar is None or (a.option_strings and shown == a.dest.upper()):
                bad.append(f"{' '.join(path)} {'/'.join(a.option_strings) or a.dest}: {shown}")
    assert seen > 60  # the walk reached every command
    assert bad == []


def test_the_walk_would_catch_a_placeholder():
    p = argparse.ArgumentParser()
    p.add_argument("--heartbeat-interval", type=float)
    a = p._actions[-1]
    assert a.metavar is None and (a.metavar or a.dest.upper()) == "HEARTBEAT_INTERVAL"


@pytest.mark.parametrize("argv, typo, hint", [
    (["serve", "--allocations", "a.xml", "--heartbeat-intervl", "2"], "--heartbeat-intervl", "--heartbeat-interval"),
    (["cluster", "status", "--jsno"], "--jsno", "--json"),
    (["cluster", "submit", "--queue", "a", "--usr", "ann", "--", "pi"], "--usr", "--user"),
    (["dp", "price", "--sever", "h:1"], "--sever", "--server"),
    (["validate", "--stict", "a.xml"], "--stict", "--strict"),
    (["simulate", "small-jobs", "--sed", "3"], "--sed", "--seed"),
])
def test_a_typo_in_a_subcommand_prints_that_subcommands_usage(argv, typo, hint):
    command = " ".join(a for a in argv[:2] if not a.startswith("-") and a not in ("a.xml", "small-jobs"))
    r = run(*argv)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"usage: slotwise {command} "), r.stderr
    assert f"slotwise {command}: error: unrecognized arguments: {typo}" in r.stderr
    assert f"did you mean {hint}?" in r.stderr
    assert "{validate,shares" not in r.stderr  # not the top-level usage


def test_a_bad_value_in_a_nested_subcommand_names_it():
    r = run("cluster", "up", "--nodes", "zero")
    assert r.returncode == 2 and r.stderr.startswith("usage: slotwise cluster up ")
    assert "argument --nodes: not a number: zero" in r.stderr


def test_old_flag_names_still_work_and_stay_out_of_help():
    p = build_parser()
    assert p.parse_args(["serve", "--allocations", "a", "--cluster-dir", "/c"]).cluster_dir == "/c"
    assert p.parse_args(["serve", "--allocations", "a", "--dir", "/c"]).cluster_dir == "/c"
    assert p.parse_args(["dp", "price", "--url", "http://h:1/"]).server == "http://h:1"
    assert p.parse_args(["explain", "app_1", "--url", "h:2"]).server == "http://h:2"
    assert p.parse_args(["simulate", "trace", "--heartbeat", "2"]).heartbeat == 2.0
    assert p.parse_args(["simulate", "trace", "--heartbeat-interval", "2"]).heartbeat == 2.0
    assert p.parse_args(["cluster", "submit", "--pool", "q", "--", "pi"]).queue == "q"
    for argv, old in ((["serve"], "--cluster-dir"), (["dp", "price"], "--url"), (["explain"], "--url"),
                      (["diff"], "--url"), (["simulate"], "--heartbeat ")):
        text = run(*argv, "--help").stdout
        assert text and old not in text, (argv, text)


def test_one_server_flag_for_every_client_of_the_web_api():
    """explain, diff, dp and cluster submit all take --server HOST:PORT or a URL."""
    p = build_parser()
    for argv in (["explain", "a", "{}"], ["diff", "f.xml", "{}"], ["dp", "price", "{}"], ["dp", "info", "q", "{}"],
                 ["cluster", "submit", "--queue", "q", "{}", "--", "pi"]):
        def given(*server):
            i = argv.index("{}")
            return p.parse_args([*argv[:i], *server, *argv[i + 1:]]).server
        assert given() == "http://127.0.0.1:9797"
        assert given("--server", "10.0.0.1:80") == "http://10.0.0.1:80"
        assert given("--server", "https://sched.example/") == "https://sched.example"
    r = run("explain", "a", "--server", "nope")
    assert r.returncode == 2 and "expected HOST:PORT or http://HOST:PORT, got 'nope'" in r.stderr


def test_one_dir_flag_for_the_cluster_directory():
    p = build_parser()
    for argv in (["serve", "--allocations", "a"], ["demo"], ["cluster", "status"], ["cluster", "up"],
                 ["cluster", "submit", "--queue", "q", "--", "pi"]):
        where = len(argv) if argv[-1] != "pi" else len(argv) - 2
        args = p.parse_args([*argv[:where], "--dir", "/c", *argv[where:]])
        assert "/c" in (getattr(args, "dir", None), getattr(args, "cluster_dir", None)), argv


def test_validate_errors_on_stderr_verdicts_on_stdout(tmp_path):
    good = ROOT / "conf" / "allocations.xml"
    bad = tmp_path / "bad.xml"
    bad.write_text("<allocations>\n  <queue name=\"a\">\n    <weight>heavy</weight>\n  </queue>\n</allocations>\n")
    r = run("validate", str(good), str(bad))
    assert r.returncode == 1
    # A verdict per file on stdout, the broken one's too; its details on stderr.
    assert r.stdout == f"{good}: valid yarn allocation file, 4 queues\n{bad}: invalid, 1 error(s)\n"
    assert r.stderr.startswith(f"{bad}:3: ") and "weight" in r.stderr and len(r.stderr.splitlines()) == 1
    quiet = run("validate", "-q", str(good), str(bad))  # -q: no verdict for a valid file
    assert quiet.returncode == 1 and quiet.stdout == f"{bad}: invalid, 1 error(s)\n" and quiet.stderr == r.stderr
    js = run("validate", "--json", str(good), str(bad))
    assert js.returncode == 1 and js.stderr == ""  # --json: the same verdicts, the errors inside
    data = json.loads(js.stdout)
    assert [(d["file"], d["valid"], d["queues"]) for d in data] == [(str(good), True, 4), (str(bad), False, None)]
    assert len(data[1]["errors"]) == 1 and data[1]["errors"][0].startswith(f"{bad}:3: ")


def test_serve_says_a_broken_file_on_stderr(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<allocations>\n  <queue name='a'>\n    <weight>x</weight>\n  </queue>\n</allocations>\n")
    r = run("serve", "--allocations", str(bad), "--admin-token-file", str(tmp_path / "t"), timeout=60)
    assert r.returncode == 1 and r.stdout == "" and r.stderr.startswith(f"{bad}:3:")


def test_a_missing_or_bad_value_prints_the_subcommands_usage():
    r = run("shares", "--capacity", "10")
    assert r.returncode == 2 and r.stderr.startswith("usage: slotwise shares ")
    assert "slotwise shares: error: the following arguments are required: --allocations" in r.stderr
    r = run("dp", "set-spending", "alice")
    assert r.returncode == 2 and r.stderr.startswith("usage: slotwise dp set-spending ")
    assert "required: RATE" in r.stderr


@pytest.mark.parametrize("argv, said", [
    (["explian", "app_1"], "slotwise: error: unknown command 'explian': did you mean explain?"),
    (["cluster", "stauts"], "slotwise cluster: error: unknown command 'stauts': did you mean status?"),
    (["dp", "prise"], "slotwise dp: error: unknown command 'prise': did you mean price?"),
    (["shares", "--allocations", "a.xml", "--capacity", "1", "--share-rule", "yarnn"],
     "slotwise shares: error: argument --share-rule: invalid choice: 'yarnn': did you mean yarn?"),
])
def test_a_mistyped_command_or_choice_gets_a_did_you_mean(argv, said):
    r = run(*argv)
    assert r.returncode == 2 and r.stdout == ""
    assert said in r.stderr, r.stderr
    # a command name quite unlike any gets no guess, only the list
    r = run("frobnicate")
    assert r.returncode == 2 and "unknown command 'frobnicate' (commands: validate, shares, cluster" in r.stderr
    assert "did you mean" not in r.stderr


@pytest.mark.parametrize("argv, typo, meant", [
    (["cluster", "submit", "--queu", "a", "--", "pi"], "--queu", "--queue"),
    (["serve", "--allocation", "a.xml"], "--allocation", "--allocations"),
    (["validate", "--stric", "a.xml"], "--stric", "--strict"),
    (["diff", "new.xml", "--admin-token", "t"], "--admin-token", "--admin-token-file"),
])
def test_a_prefix_of_a_flag_is_a_typo_not_an_abbreviation(argv, typo, meant):
    """argparse would take ``--queu`` for ``--queue``; here no parser, top or
    nested, accepts an abbreviation, and the error says what was meant."""
    r = run(*argv)
    assert r.returncode == 2 and r.stdout == ""
    assert f"{typo}: did you mean {meant}?" in r.stderr, r.stderr
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    assert all(not parser.allow_abbrev for _, parser in parsers(build_parser()))


def test_each_restart_command_says_what_it_restarts():
    cluster = dict(parsers(build_parser()))[("slotwise", "cluster")]
    commands = next(a for a in cluster._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in commands._choices_actions}
    assert helps["restart-rm"].startswith("restart the ResourceManager")
    assert helps["restart-jt"].startswith("restart the JobTracker")
    text = " ".join(run("cluster", "--help").stdout.split())
    assert "restart-rm restart the ResourceManager" in text and "restart-jt restart the JobTracker" in text
