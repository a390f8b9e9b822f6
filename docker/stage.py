"""Stages the build context of an image under run/docker/context/NAME.

    python docker/stage.py hadoop     # jars, classpath order, JVM flags, log4j
    python docker/stage.py policy     # the slotwise wheel and its dependencies

Prints the image's key: a digest of everything it is made of (``--key``:
only that, staging nothing), which docker/build-images.sh compares with the
image's label to skip a rebuild.
The Hadoop jars are the ones java-shim/pom.xml resolves (the same list the
local cluster runs), the shim jar the one `mvn package` built; the wheels come
from PyPI on this machine, so the image build itself needs only the Debian
mirror.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from slotwise.localcluster.classpath import build_shim, find_shim_jar, jar_cache, jar_is_stale, resolve  # noqa: E402
from slotwise.localcluster.config import log4j_properties  # noqa: E402
from slotwise.localcluster.jvm import ADD_OPENS, FAST_START  # noqa: E402
from slotwise.localcluster.mrv1_conf import mrv1_log4j  # noqa: E402
from slotwise.localcluster.mrv1_hadoop import (build_mrv1_shim, daemon_classpath, extract_webapps, find_mrv1_shim_jar,  # noqa: E402
                                               resolve_hadoop1)


class Key:
    """A digest of what an image is made of, fed piece by piece."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()

    def text(self, name: str, data: str | bytes) -> None:
        self.h.update(name.encode() + b"\0" + (data.encode() if isinstance(data, str) else data) + b"\0")

    def files(self, root: Path) -> None:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            self.text(str(path.relative_to(REPO)), path.read_bytes())

    def artifact(self, path: str | Path) -> None:
        # A release jar or wheel: its name and size say enough (hashing 150 MB each time would not).
        self.text(Path(path).name, str(Path(path).stat().st_size))

    def hexdigest(self) -> str:
        return self.h.hexdigest()[:16]


def fresh(ctx: Path, image_dir: Path) -> None:
    if ctx.exists():
        shutil.rmtree(ctx)
    shutil.copytree(image_dir, ctx)


def link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr)


def _flags() -> list[str]:
    return ["-XX:+IgnoreUnrecognizedVMOptions", *FAST_START, *ADD_OPENS, "--enable-native-access=ALL-UNNAMED",
            "-Djava.net.preferIPv4Stack=true"]


def hadoop_key() -> str:
    jars = resolve(REPO, jar_cache(REPO), _log)
    shim = find_shim_jar(REPO)
    h1 = resolve_hadoop1(REPO, jar_cache(REPO), _log)
    shim1 = find_mrv1_shim_jar(REPO)
    if jar_is_stale(REPO, shim, "java-shim") or jar_is_stale(REPO, shim1, "mrv1-shim"):
        return "stale-shim"
    key = Key()
    key.files(REPO / "docker" / "hadoop")
    key.text("stage.py", Path(__file__).read_bytes())  # how the context is laid out
    for jar in [*jars.classpath, shim, jars.examples_jar, jars.tests_jar, *h1.jars, shim1]:
        if jar:
            key.artifact(jar)
    key.text("log4j1", mrv1_log4j(None))
    key.text("flags", "\n".join(_flags()))
    key.text("log4j", log4j_properties(None))
    return key.hexdigest()


def policy_key() -> str:
    key = Key()
    key.files(REPO / "docker" / "policy")
    key.text("pyproject.toml", (REPO / "pyproject.toml").read_bytes())
    key.files(REPO / "python" / "slotwise")
    return key.hexdigest()


def stage_hadoop(ctx: Path) -> None:
    fresh(ctx, REPO / "docker" / "hadoop")
    jars = resolve(REPO, jar_cache(REPO), _log)
    shim = build_shim(REPO, _log)  # Maven only when the jar is stale
    # Hadoop's jars and the shim in layers of their own: a change to the shim
    # alone reuses the layer of Hadoop's 500 MB.
    (ctx / "jars").mkdir()
    (ctx / "shim").mkdir()
    order = []
    for jar, folder in [*((j, "jars") for j in jars.classpath), (str(shim), "shim")]:
        entry = f"{folder}/{Path(jar).name}"
        if not any(e.endswith("/" + Path(jar).name) for e in order):
            link_or_copy(Path(jar), ctx / entry)
            order.append(entry)
    # hadoop-hdfs's jar on Maven Central lacks the webapps/ tree of Hadoop's
    # tarball, and the NameNode's and DataNode's HTTP servers (JMX, WebHDFS,
    # the servlets they add themselves) need webapps/NAME on the classpath:
    # an index page each, first on the classpath.
    for app in ("hdfs", "datanode", "secondary"):
        (ctx / "webapps-root" / "webapps" / app).mkdir(parents=True)
        (ctx / "webapps-root" / "webapps" / app / "index.html").write_text(
            f"<!doctype html><title>{app}</title><p>Slotwise's Hadoop image: /jmx and /webhdfs serve here.</p>\n")
    order.insert(0, "webapps-root")
    extras = ctx / "extra-jars"   # on the job client's classpath only
    extras.mkdir()
    for jar in (jars.examples_jar, jars.tests_jar):
        if jar:
            link_or_copy(Path(jar), extras / Path(jar).name)
    # One path (under /opt/hadoop) per line, each line ending in a newline (a reader that loses an
    # unterminated last line would lose a jar).
    (ctx / "classpath.txt").write_text("".join(f"{n}\n" for n in order))
    (ctx / "jvm-flags.txt").write_text("".join(f"{f}\n" for f in _flags()))
    (ctx / "log4j.properties").write_text(log4j_properties(None))
    (ctx / "hadoop-version.txt").write_text(jars.hadoop_version + "\n")
    stage_hadoop1(ctx / "hadoop1")


def stage_hadoop1(ctx: Path) -> None:
    """Hadoop 1.2.1 (mrv1-shim/pom.xml's jars), hadoop-core's webapps/ tree
    and the MRv1 shim, for /opt/hadoop1; classpath.txt in bin/hadoop's order
    (the webapps root and hadoop-core first: the entrypoint puts the shim
    after them)."""
    cache = jar_cache(REPO)
    h1 = resolve_hadoop1(REPO, cache, _log)
    webapps = extract_webapps(h1.core_jar, cache)
    shim = build_mrv1_shim(REPO, _log)
    for d in ("jars", "shim"):
        (ctx / d).mkdir(parents=True)
    shutil.copytree(webapps / "webapps", ctx / "webapps-root" / "webapps")
    link_or_copy(Path(shim), ctx / "shim" / Path(shim).name)
    order = []
    for entry in daemon_classpath(h1.jars, "webapps-root"):
        if entry == "webapps-root":
            order.append(entry)
            continue
        link_or_copy(Path(entry), ctx / "jars" / Path(entry).name)
        order.append(f"jars/{Path(entry).name}")
    (ctx / "classpath.txt").write_text("".join(f"{n}\n" for n in order))
    (ctx / "examples.txt").write_text(f"jars/{Path(h1.examples_jar).name}\n" if h1.examples_jar else "")
    (ctx / "log4j.properties").write_text(mrv1_log4j(None))
    (ctx / "hadoop-version.txt").write_text(h1.hadoop_version + "\n")


def stage_policy(ctx: Path) -> None:
    """The slotwise wheel in wheels/app and its dependencies in wheels/deps:
    the image installs them in two layers, so a change to Slotwise alone
    rebuilds only the small one (Docker reuses the dependencies' layer)."""
    fresh(ctx, REPO / "docker" / "policy")
    app, deps = ctx / "wheels" / "app", ctx / "wheels" / "deps"
    app.mkdir(parents=True)
    deps.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(app), str(REPO)], check=True,
                   stdout=sys.stderr)
    built = next(app.glob("slotwise-*.whl"))
    # The image runs bookworm's Python 3.11 on this machine's architecture:
    # the wheels this Python would install fit it.
    subprocess.run([*pip, "download", "--only-binary=:all:", "-d", str(deps), str(built)],
                   check=True, stdout=sys.stderr)
    for copy in deps.glob("slotwise-*.whl"):  # pip download puts the wheel it was given beside its deps
        copy.unlink()


def main() -> None:
    args = sys.argv[1:]
    images = {"hadoop": (hadoop_key, stage_hadoop), "policy": (policy_key, stage_policy)}
    if not args or args[0] not in images or args[1:] not in ([], ["--key"]):
        sys.exit("usage: stage.py hadoop|policy [--key]")
    key, stage = images[args[0]]
    if args[1:] != ["--key"]:
        ctx = REPO / "run" / "docker" / "context" / args[0]
        ctx.parent.mkdir(parents=True, exist_ok=True)
        stage(ctx)
    print(key())


if __name__ == "__main__":
    main()
