"""The grammar every ``slotwise`` command shares: a subcommand's own usage on
its errors, one ``--server`` for every client of the web API, old flag names
kept as hidden aliases.  In one place so each command cannot drift."""

from __future__ import annotations

import argparse
import difflib
import urllib.parse

#: serve's --http default, where every client of its API looks first.
DEFAULT_SERVER = "127.0.0.1:9797"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose subcommands report their own errors: argparse
    hands an unknown flag after a subcommand up to the top parser, which
    prints the top-level usage; here the subcommand that was given it says
    so, with its usage and a "did you mean" (exit 2)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)

    def unknown(self, extras: list[str]) -> None:
        known = [s for a in self._actions for s in a.option_strings]
        hints = []
        for arg in extras:
            if arg.startswith("-"):
                close = difflib.get_close_matches(arg.split("=", 1)[0], known, n=1, cutoff=0.75)
                if close:
                    hints.append(f"{arg}: did you mean {close[0]}?")
        self.error(f"unrecognized arguments: {' '.join(extras)}" + (f" ({'; '.join(hints)})" if hints else ""))


class _Subcommands(argparse._SubParsersAction):
    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        extras = getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR, None)
        if extras:
            chosen = self._name_parser_map[values[0]]
            if isinstance(chosen, Parser):
                chosen.unknown(extras)
            chosen.error(f"unrecognized arguments: {' '.join(extras)}")


def server_url(text: str) -> str:
    """``--server``: a URL (http://host:port[/prefix]) or HOST:PORT, as one
    base URL without a trailing slash."""
    text = text.strip()
    url = text if "://" in text else f"http://{text}"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or \
            ("://" not in text and port is None):
        raise argparse.ArgumentTypeError(f"expected HOST:PORT or http://HOST:PORT, got {text!r}")
    return url.rstrip("/")


def add_server(p: argparse.ArgumentParser, what: str = "the serve to ask") -> None:
    """``--server`` (and the old ``--url``, hidden) on a client of serve's web API."""
    p.add_argument("--server", type=server_url, default=server_url(DEFAULT_SERVER), metavar="HOST:PORT|URL",
                   help=f"{what}: its --http address (default {DEFAULT_SERVER})")
    alias(p, "--url", "server", type=server_url, metavar="URL")


def alias(p, flag: str, dest: str, **kwargs) -> None:
    """An old name of a flag, still accepted, kept out of --help."""
    p.add_argument(flag, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
