"""Hot reload of the allocation file: real files, a real watcher thread.

Every wait is ``wait_for(pred)``: it only says "this happened within the
timeout", never how fast.  The few "nothing happened" checks first
``settle`` the watcher: it has seen every event of what the test did, and a
check begun after the last change it noticed is done; no sleep stands in
for that.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

import pytest

from slotwise.config.watcher import ConfigStatus, ConfigWatcher, load_with_status

NAME = "alloc.xml"


def alloc(weight, b_weight=None) -> str:
    """A valid YARN allocation file; root.a's weight is on line 4."""
    b = f"<queue name=\"b\"><weight>{b_weight}</weight></queue>" if b_weight is not None \
        else "<queue name=\"b\"/>"
    return ("<?xml version=\"1.0\"?>\n"
            "<allocations>\n"
            "  <queue name=\"a\">\n"
            f"    <weight>{weight}</weight>\n"
            "  </queue>\n"
            f"  {b}\n"
            "</allocations>\n")


BROKEN_WEIGHT = alloc("three")  # line 4: not a number
UNCLOSED = ("<?xml version=\"1.0\"?>\n"
            "<allocations>\n"
            "  <queue name=\"a\">\n"
            "    <weight>2</weight>\n"
            "  <queue name=\"b\"/>\n"
            "</allocations>\n")  # <queue name="a"> never closed: lxml names line 6


def wait_for(pred, timeout: float = 30.0, what: str | None = None):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what or getattr(pred, '__name__', pred)}")
        time.sleep(0.02)


_sentinels = itertools.count()


def settle(w: ConfigWatcher) -> None:
    """Wait until the watcher has seen every event of what the test did in
    its directory so far (a sentinel file is made there, of a name it does
    not react to: inotify hands its events over after every earlier one),
    then until a check begun after the last change it noticed is done."""
    sentinel = os.path.join(os.path.dirname(w.path), f"zz-settle-{next(_sentinels)}")
    with open(sentinel, "w"):
        pass
    wait_for(lambda: sentinel in w.last_event, what="the watcher to see the sentinel file")
    changes = w.changes
    wait_for(lambda: w.checked_changes >= changes, what=f"a check begun after change {changes}")


def write_in_place(path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def rename_save(path, text: str, tmp_name: str | None = None) -> None:
    """Save like an editor: write a temp file beside it, rename it over."""
    tmp = os.path.join(os.path.dirname(path), tmp_name or f".{os.path.basename(path)}.swp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Recorder:
    """on_config / on_error callbacks that remember what they got."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.configs: list = []  # (config, text)
        self.errors: list[list[str]] = []

    def on_config(self, config, text) -> None:
        with self.lock:
            self.configs.append((config, text))

    def on_error(self, errors) -> None:
        with self.lock:
            self.errors.append(list(errors))

    def weights(self) -> list[float]:
        with self.lock:
            return [c.queues()["root.a"].weight for c, _ in self.configs]

    def last_weight(self):
        w = self.weights()
        return w[-1] if w else None


@pytest.fixture
def start_watcher():
    """start_watcher(path, **kw) -> (watcher, recorder, status); every watcher is stopped."""
    watchers: list[ConfigWatcher] = []

    def start(path, status: ConfigStatus | None = None, cls=ConfigWatcher, **kw):
        path = str(path)
        if status is None:
            _, status = load_with_status(path)
        rec = Recorder()
        kw.setdefault("debounce", 0.05)
        w = cls(path, rec.on_config, status, on_error=rec.on_error, **kw)
        watchers.append(w)
        w.start()
        return w, rec, status

    yield start
    for w in watchers:
        w.stop()


@pytest.fixture
def alloc_file(tmp_path):
    p = tmp_path / NAME
    p.write_text(alloc(1))
    return p


# ------------------------------------------------------------------- saves
def test_in_place_write_is_picked_up(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file, stat_interval=0)  # the directory watch alone
    assert status.reloads == 0 and status.text == alloc(1)
    before = time.time()
    write_in_place(alloc_file, alloc(2))
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 handed over")
    wait_for(lambda: status.reloads == 1, what="status.reloads == 1")
    assert status.loaded_at is not None and status.loaded_at >= before
    assert status.text == alloc(2)
    assert status.errors == []
    cfg, text = rec.configs[-1]
    assert text == alloc(2)
    assert set(cfg.queues()) == {"root", "root.a", "root.b"}
    assert cfg.queues()["root.b"].weight == 1.0


def test_rename_save_is_picked_up_twice(alloc_file, start_watcher):
    # The directory watch alone (the stat check is off).
    w, rec, status = start_watcher(alloc_file, stat_interval=0)
    ino = os.stat(alloc_file).st_ino
    rename_save(alloc_file, alloc(2))
    assert os.stat(alloc_file).st_ino != ino  # really a new inode
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 after first rename-save")
    # The watch is on the directory, so it survives the inode change.
    rename_save(alloc_file, alloc(3, b_weight=4), tmp_name=NAME + ".tmp123")
    wait_for(lambda: rec.last_weight() == 3.0, what="weight 3 after second rename-save")
    assert rec.configs[-1][0].queues()["root.b"].weight == 4.0
    wait_for(lambda: status.reloads == 2, what="status.reloads == 2")
    assert status.text == alloc(3, b_weight=4)
    assert not os.path.exists(alloc_file.parent / (NAME + ".tmp123"))


def test_rename_from_a_temp_file_with_an_unrelated_name(alloc_file, start_watcher):
    """Only the rename's destination is the allocation file."""
    w, rec, status = start_watcher(alloc_file)
    rename_save(alloc_file, alloc(5), tmp_name="tmpXk3j9a")
    wait_for(lambda: rec.last_weight() == 5.0, what="weight 5 handed over")


# ------------------------------------------------------------------ errors
def test_broken_file_keeps_last_good_config_until_fixed(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file)
    good_sha = status.sha256
    write_in_place(alloc_file, BROKEN_WEIGHT)
    wait_for(lambda: rec.errors, what="on_error called")
    path = str(alloc_file)
    assert len(status.errors) == 1
    assert status.errors[0].startswith(f"{path}:4: ")
    assert "three" in status.errors[0]
    assert rec.errors == [status.errors]
    assert rec.configs == []  # not handed over
    assert status.failures == 1 and status.error_at is not None
    # The last good one is still what status reports as loaded.
    assert status.reloads == 0 and status.sha256 == good_sha and status.text == alloc(1)

    write_in_place(alloc_file, alloc(7))
    wait_for(lambda: rec.last_weight() == 7.0, what="fixed config handed over")
    wait_for(lambda: status.errors == [] and status.reloads == 1, what="status.errors cleared")
    assert status.error_at is None
    assert status.text == alloc(7)
    assert len(rec.errors) == 1


def test_reverting_a_broken_file_to_the_last_good_content_clears_errors(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file)
    write_in_place(alloc_file, BROKEN_WEIGHT)
    wait_for(lambda: status.errors, what="errors reported")
    rename_save(alloc_file, alloc(1))  # back to what was loaded at start-up
    wait_for(lambda: status.errors == [], what="errors cleared")
    assert rec.last_weight() == 1.0


def test_malformed_xml_names_file_and_line(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file)
    rename_save(alloc_file, UNCLOSED)
    wait_for(lambda: rec.errors, what="on_error called")
    assert len(status.errors) == 1
    assert status.errors[0].startswith(f"{alloc_file}:6: XML syntax error")
    assert rec.configs == []
    rename_save(alloc_file, alloc(2))
    # The status follows the engine's acceptance (on_config first): wait for both.
    wait_for(lambda: rec.last_weight() == 2.0 and status.errors == [], what="good config after the syntax error")


def test_deleted_file_keeps_last_good_config(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file)
    write_in_place(alloc_file, alloc(2))
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 handed over")
    os.remove(alloc_file)
    wait_for(lambda: status.errors, what="the missing file reported")
    assert rec.weights() == [2.0]  # nothing handed over
    assert status.errors == [f"{alloc_file}: file is missing; the last good version stays in force"]
    assert status.text == alloc(2) and status.reloads == 1
    assert w.check() is False  # no crash on a missing file either
    write_in_place(alloc_file, alloc(2))  # the same content back counts as new
    wait_for(lambda: rec.weights() == [2.0, 2.0] and status.reloads == 2,
             what="weight 2 again after the file came back")
    assert status.errors == []


# ---------------------------------------------------------------- debounce
def test_quick_writes_end_with_the_last_content(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file, debounce=0.1)
    for i in range(2, 12):
        if i % 2:
            rename_save(alloc_file, alloc(i))
        else:
            write_in_place(alloc_file, alloc(i))
        time.sleep(0.005)
    wait_for(lambda: rec.last_weight() == 11.0, what="the last write (weight 11) in force")
    wait_for(lambda: status.text == alloc(11), what="status.text is the last write")
    settle(w)
    assert rec.last_weight() == 11.0 and status.text == alloc(11)
    # Whatever was picked up on the way, only the versions written, in order.
    ws = rec.weights()
    assert ws == sorted(ws) and set(ws) <= set(map(float, range(2, 12)))


def test_identical_content_does_not_reload(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file)
    write_in_place(alloc_file, alloc(1))  # same bytes as loaded at start-up
    rename_save(alloc_file, alloc(1))
    os.utime(alloc_file)
    assert w.check() is False
    settle(w)
    assert w.checked_changes > 0  # the watcher did look at the file after those saves
    assert rec.configs == [] and status.reloads == 0 and rec.errors == []
    # It is still watching: a real change after that is picked up, alone.
    write_in_place(alloc_file, alloc(2))
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 handed over")
    settle(w)
    assert rec.weights() == [2.0] and status.reloads == 1


# -------------------------------------------------------------- poll mode
def test_poll_mode_in_place_and_rename(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file, poll=0.2)
    write_in_place(alloc_file, alloc(2))
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 in poll mode (in place)")
    rename_save(alloc_file, alloc(3))
    wait_for(lambda: rec.last_weight() == 3.0, what="weight 3 in poll mode (rename-save)")
    rename_save(alloc_file, alloc(4))
    wait_for(lambda: rec.last_weight() == 4.0, what="weight 4 in poll mode (second rename-save)")
    write_in_place(alloc_file, BROKEN_WEIGHT)
    wait_for(lambda: status.errors, what="errors in poll mode")
    assert status.errors[0].startswith(f"{alloc_file}:4: ")
    assert status.reloads == 3


# ------------------------------------------------------- stat safety net
# A write through a hard link in another directory changes the watched
# file's inode, but inotify reports it only to the directory the writer's
# path is in, so the directory watch never hears about it.  That is the
# same blind spot as a Docker single-file bind mount written from the host.

@pytest.fixture
def linked_file(tmp_path):
    watched, elsewhere = tmp_path / "watched", tmp_path / "elsewhere"
    watched.mkdir()
    elsewhere.mkdir()
    other = elsewhere / NAME
    other.write_text(alloc(1))
    os.link(other, watched / NAME)
    return watched / NAME, other


def test_hard_link_write_is_invisible_to_the_directory_watch(linked_file, start_watcher):
    """Control for the next test: with the stat check off, nothing sees it."""
    path, other = linked_file
    w, rec, status = start_watcher(path, stat_interval=0)
    write_in_place(other, alloc(2))
    # (Not path.read_text(): the watcher reacts to anyone opening the file.)
    assert os.stat(path).st_ino == os.stat(other).st_ino
    assert os.stat(path).st_size == len(alloc(2))
    settle(w)  # every event the watch had for the directory is in
    assert w.changes == 0 and rec.configs == [] and status.reloads == 0


def test_stat_safety_net_catches_what_the_watch_misses(linked_file, start_watcher):
    path, other = linked_file
    w, rec, status = start_watcher(path, stat_interval=0.2)
    write_in_place(other, alloc(2))  # same size as before: only mtime tells
    # The status is updated once the new config is handed over: wait for both.
    wait_for(lambda: rec.last_weight() == 2.0 and status.reloads == 1, what="weight 2 via the stat check")
    assert status.text == alloc(2)


# ------------------------------------------- regressions (once watcher bugs)
def test_watcher_goes_quiet_after_a_reload(alloc_file, start_watcher):
    """The watcher's own reads of the file (opens, read-only closes) are no
    change: once it has checked the last write, the events of that check
    reach it before a second sentinel's and start nothing. Fails if it
    reacts to its own reads (it would check again and again)."""
    w, rec, status = start_watcher(alloc_file, debounce=0.1, stat_interval=0)
    write_in_place(alloc_file, alloc(2))
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 handed over")
    settle(w)
    changes, checks = w.changes, w.checks
    settle(w)  # whatever the last check's reads made the watcher see is in by now
    assert (w.changes, w.checks) == (changes, checks)


def test_slow_on_config_does_not_let_an_older_version_win(alloc_file, start_watcher):
    entered, release = threading.Event(), threading.Event()
    lock = threading.Lock()
    state = {"active": 0, "max_active": 0, "texts": []}

    def on_config(config, text):
        with lock:
            state["active"] += 1
            state["max_active"] = max(state["max_active"], state["active"])
            state["texts"].append(text)
            first = len(state["texts"]) == 1
        if first:
            entered.set()
            release.wait(10)  # e.g. applying the config to a busy engine
        with lock:
            state["active"] -= 1

    _, status = load_with_status(str(alloc_file))
    w = ConfigWatcher(str(alloc_file), on_config, status, debounce=0.05, stat_interval=0)
    w.start()
    try:
        write_in_place(alloc_file, alloc(2))
        wait_for(entered.is_set, what="first on_config entered")
        write_in_place(alloc_file, alloc(3))
        # The second version's check is asked for while the first call is
        # still in on_config; give it every chance to be handed over
        # meanwhile (a correct watcher holds it back until the first returns).
        wait_for(lambda: w.checks_asked >= 2, what="the second version's check asked for")
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline and len(state["texts"]) < 2:
            time.sleep(0.02)
        release.set()
        wait_for(lambda: state["texts"][-1:] == [alloc(3)], what="weight 3 handed over")
        wait_for(lambda: state["active"] == 0, what="on_config calls finished")
        settle(w)
        assert state["max_active"] == 1, "on_config ran on two threads at once"
        assert status.text == alloc(3), "status names an older version than the one in force"
    finally:
        release.set()
        w.stop()


def test_a_file_with_warnings_loads_and_its_warnings_show(alloc_file, start_watcher):
    w, rec, status = start_watcher(alloc_file)
    assert status.warnings == []
    write_in_place(alloc_file, alloc(2).replace("<weight>2</weight>", "<weight>2</weight><maxApps>3</maxApps>"))
    wait_for(lambda: rec.last_weight() == 2.0, what="weight 2 handed over despite the unknown element")
    assert status.errors == [] and len(status.warnings) == 1
    assert status.warnings[0].startswith(f"{alloc_file}:4: warning: unknown element <maxApps> in queue root.a")
    assert status.to_dict()["warnings"] == status.warnings
