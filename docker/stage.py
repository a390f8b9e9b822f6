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

from slotwise.localcluster.classpath import build_shim, find_shim_jar, resolve  # noqa: E402
from slotwise.localcluster.config import log4j_properties  # noqa: E402
from slotwise.localcluster.jvm import ADD_OPENS  # noqa: E402


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
    return ["-XX:+IgnoreUnrecognizedVMOptions", *ADD_OPENS, "--enable-native-access=ALL-UNNAMED",
            "-Djava.net.preferIPv4Stack=true"]


def _shim_is_stale(shim: Path | None) -> bool:
    sources = [p for d in ("java-shim", "shim-link") for p in (REPO / d / "src" / "main").rglob("*") if p.is_file()]
    sources.append(REPO / "java-shim" / "pom.xml")
    return shim is None or any(p.stat().st_mtime > shim.stat().st_mtime for p in sources)


def hadoop_key() -> str:
    jars = resolve(REPO, REPO / "run" / "docker" / "cache", _log)
    shim = find_shim_jar(REPO)
    if _shim_is_stale(shim):
        return "stale-shim"
    key = Key()
    key.files(REPO / "docker" / "hadoop")
    for jar in [*jars.classpath, shim, jars.examples_jar, jars.tests_jar]:
        if jar:
            key.artifact(jar)
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
    jars = resolve(REPO, REPO / "run" / "docker" / "cache", _log)
    shim = find_shim_jar(REPO)
    if _shim_is_stale(shim):
        shim = build_shim(REPO, _log)
    out = ctx / "jars"
    out.mkdir()
    order = []
    for jar in [*jars.classpath, str(shim)]:
        name = Path(jar).name
        if name not in order:
            link_or_copy(Path(jar), out / name)
            order.append(name)
    extras = ctx / "extra-jars"   # on the job client's classpath only
    extras.mkdir()
    for jar in (jars.examples_jar, jars.tests_jar):
        if jar:
            link_or_copy(Path(jar), extras / Path(jar).name)
    # One per line, each line ending in a newline (a reader that loses an
    # unterminated last line would lose a jar).
    (ctx / "classpath.txt").write_text("".join(f"{n}\n" for n in order))
    (ctx / "jvm-flags.txt").write_text("".join(f"{f}\n" for f in _flags()))
    (ctx / "log4j.properties").write_text(log4j_properties(None))
    (ctx / "hadoop-version.txt").write_text(jars.hadoop_version + "\n")


def stage_policy(ctx: Path) -> None:
    fresh(ctx, REPO / "docker" / "policy")
    wheels = ctx / "wheels"
    wheels.mkdir()
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(REPO)], check=True,
                   stdout=sys.stderr)
    built = next(wheels.glob("slotwise-*.whl"))
    # The image runs bookworm's Python 3.11 on this machine's architecture:
    # the wheels this Python would install fit it.
    subprocess.run([*pip, "download", "--only-binary=:all:", "-d", str(wheels), str(built)],
                   check=True, stdout=sys.stderr)


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
