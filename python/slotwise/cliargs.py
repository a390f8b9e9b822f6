"""The grammar every ``slotwise`` command shares: a subcommand's own usage on
its errors, a "did you mean" for a mistyped flag or command, no abbreviated
flags, one ``--server`` for every client of the web API, old flag names kept
as hidden aliases.  In one place so each command cannot drift."""

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
    so, with its usage and a "did you mean" (exit 2).  A mistyped command or
    choice gets a "did you mean" too.  No abbreviations (``--queu`` for
    ``--queue``): a typo must not pass for a flag, and a flag added later
    must not change what an old command line means.  Subcommands are made of
    this class too (argparse's default), so all of this holds at every level."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)
        self._strangers: list[str] = []  # flags of this parse it does not know

    def parse_known_args(self, args=None, namespace=None):
        self._strangers = []
        return super().parse_known_args(args, namespace)

    def _parse_optional(self, arg_string):
        found = super()._parse_optional(arg_string)
        if isinstance(found, tuple) and found[0] is None and arg_string.startswith("--") and \
                self._subparsers is None:  # a parser of commands sees its commands' flags too
            self._strangers.append(arg_string)
        return found

    def error(self, message: str):
        """Any error (a required flag missing...) also says which flags given
        were not known, with a "did you mean": ``--queu x`` reads as a typo of
        ``--queue``, not only as ``--queue`` missing."""
        if self._strangers and "unrecognized arguments" not in message:
            message += f" (unrecognized: {'; '.join(self._hints(self._strangers))})"
        super().error(message)

    def _check_value(self, action, value):
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError:
            choices = [str(c) for c in action.choices]
            close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6) if isinstance(value, str) else []
            hint = f": did you mean {close[0]}?" if close else ""
            if isinstance(action, argparse._SubParsersAction):
                raise argparse.ArgumentError(None, f"unknown command {value!r}{hint} "
                                                   f"(commands: {', '.join(choices)})") from None
            if not close:
                raise
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} "
                                                 f"(choose from {', '.join(map(repr, choices))})") from None

    def _hints(self, args: list[str]) -> list[str]:
        """Each flag, with the nearest known one where there is one."""
        known = [s for a in self._actions for s in a.option_strings]
        out = []
        for arg in args:
            close = difflib.get_close_matches(arg.split("=", 1)[0], known, n=1, cutoff=0.75)
            out.append(f"{arg}: did you mean {close[0]}?" if close else arg)
        return out

    def unknown(self, extras: list[str]) -> None:
        hints = [h for h in self._hints([a for a in extras if a.startswith("-")]) if "did you mean" in h]
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
