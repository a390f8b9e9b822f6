"""The yarn-site snippet operators copy: well-formed, and naming the shim and
the properties the shim reads."""

from pathlib import Path

from lxml import etree

from slotwise.localcluster import SHIM_SCHEDULER

ROOT = Path(__file__).resolve().parent.parent


def test_yarn_site_snippet_names_the_shim_and_its_properties():
    doc = etree.parse(str(ROOT / "conf" / "yarn-site-slotwise.xml"))
    props = {p.findtext("name"): p.findtext("value") for p in doc.getroot().iter("property")}
    assert props["yarn.resourcemanager.scheduler.class"] == SHIM_SCHEDULER
    shim_source = "\n".join(p.read_text() for p in (ROOT / "java-shim" / "src" / "main").rglob("*.java"))
    for name in props:
        if name.startswith("slotwise."):
            assert f'"{name}"' in shim_source, f"{name} is not read by the shim"
