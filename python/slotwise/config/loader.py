"""Reading an allocation file: XML syntax, format detection, then the YARN
or MRv1 parser.  Whatever goes wrong comes back as one ``ConfigErrors``."""

from __future__ import annotations

import os
import stat

from lxml import etree

from .errors import ConfigError, ConfigErrors
from .model import AllocationConfig
from .mrv1_xml import parse_mrv1
from .yarn_xml import MRV1_ONLY_ELEMENTS, YARN_ONLY_ELEMENTS, parse_yarn


#: The largest allocation file read: thousands of queues fit in a fraction of
#: it; a bigger file is a mistake that would cost seconds and gigabytes.
MAX_FILE_BYTES = 4 * 1024 * 1024


def _xml_parser(**kw) -> etree.XMLParser:
    # An allocation file never needs a DTD, entities or the network: refuse them.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, **kw)


def detect_format(root: etree._Element) -> str:
    """"yarn" if the file uses any element only YARN knows (a stray MRv1
    element in it is then one YARN ignores, and a warning); else "mrv1" if
    it uses an element only MRv1 knows, or schedulingMode (in both: an old
    YARN alias); else "yarn"."""
    tags = {el.tag for el in root.iter() if isinstance(el.tag, str)}
    if tags & YARN_ONLY_ELEMENTS:
        return "yarn"
    if tags & MRV1_ONLY_ELEMENTS or "schedulingMode" in tags:
        return "mrv1"
    return "yarn"


def parse_allocations(data: bytes | str, source: str = "<string>") -> AllocationConfig:
    """Parse an allocation file's contents; raises ``ConfigErrors``."""
    if isinstance(data, str):
        data, parser = data.encode("utf-8"), _xml_parser(encoding="utf-8")
    else:
        parser = _xml_parser()
    if len(data) > MAX_FILE_BYTES:
        raise ConfigErrors([ConfigError(source, None, f"the file is {len(data):,} bytes; an allocation file "
                                                      f"may have at most {MAX_FILE_BYTES:,}")])
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        raise ConfigErrors([ConfigError(source, e.lineno, f"XML syntax error: {e.msg}")]) from None
    if root.getroottree().docinfo.doctype or root.getroottree().docinfo.internalDTD is not None:
        # Entities declared there would expand inside values and names.
        at = data.find(b"<!DOCTYPE")
        raise ConfigErrors([ConfigError(source, data.count(b"\n", 0, at) + 1 if at >= 0 else 1,
                                        "a DOCTYPE is not allowed in an allocation file")])
    if root.tag != "allocations":
        raise ConfigErrors([ConfigError(source, root.sourceline,
                                        f"the root element must be <allocations>, not <{root.tag}>")])
    if detect_format(root) == "mrv1":
        return parse_mrv1(root, source)
    return parse_yarn(root, source)


def read_allocation_file(path: str | os.PathLike) -> bytes:
    """The bytes of an allocation file, read through the one capped door:
    a regular file (a symlink to one is fine: ConfigMaps use them) of at
    most MAX_FILE_BYTES, never more read than that.  A device, a FIFO or a
    directory (a symlink renamed over the file pointing at /dev/zero) is
    refused before a byte is read.  Raises ConfigErrors (FileNotFoundError
    for a missing file, so a watcher can tell a rename in progress)."""
    source = os.fspath(path)
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as e:
        raise ConfigErrors([ConfigError(source, None, f"cannot read allocation file: {e.strerror or e}")]) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigErrors([ConfigError(source, None, "not a regular file (a device, pipe, socket or "
                                                          "directory); an allocation file must be a file")])
        if st.st_size > MAX_FILE_BYTES:
            raise ConfigErrors([ConfigError(source, None, f"the file is {st.st_size:,} bytes; an allocation "
                                                          f"file may have at most {MAX_FILE_BYTES:,}")])
        chunks, left = [], MAX_FILE_BYTES + 1  # a file growing while read is still cut at the cap
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise ConfigErrors([ConfigError(source, None, f"cannot read allocation file: {e.strerror or e}")]) from None
    finally:
        os.close(fd)
    return b"".join(chunks)  # parse_allocations refuses it if it passed the cap


def load_allocations(path: str | os.PathLike) -> AllocationConfig:
    """Read and parse an allocation file; an unreadable file is an error without a line."""
    source = os.fspath(path)
    try:
        data = read_allocation_file(source)
    except FileNotFoundError as e:
        raise ConfigErrors([ConfigError(source, None, f"cannot read allocation file: {e.strerror or e}")]) from None
    return parse_allocations(data, source)
