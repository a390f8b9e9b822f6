"""The Dynamic Priority store is the allocation file's, not the host's: two
serves of two files keep two markets by default, and a console shows only
the accounts its own file has, even from a store another serve shares."""

from __future__ import annotations

import argparse

import httpx

from slotwise.admin import AdminToken, SchedulerService
from slotwise.clock import ManualClock
from slotwise.config import parse_allocations
from slotwise.config.watcher import ConfigStatus
from slotwise.core import PolicyCore
from slotwise.market import Market, MarketSettings, SqliteStore
from slotwise.policies.dynamic_priority import follow_config
from slotwise.serve import market_store_path, start_http
from slotwise.settings import EngineSettings
from slotwise.web.app import create_app
from webtools import TOKEN, app_entry, free_port
from wiretools import node, payload

MARKET = """<allocations>
  <queue name="dp" type="parent"><schedulingPolicy>dynamic-priority</schedulingPolicy>
    <queue name="alice"/><queue name="bob"/></queue>
</allocations>"""
PLAIN = '<allocations><queue name="prod"/><queue name="research"/></allocations>'
OTHER_MARKET = """<allocations>
  <queue name="dp" type="parent"><schedulingPolicy>dynamic-priority</schedulingPolicy>
    <queue name="carol"/></queue>
</allocations>"""


def args(allocations, event_log=None, dp_store=None):
    return argparse.Namespace(allocations=str(allocations), event_log=event_log, dp_store=dp_store)


def test_the_default_store_is_keyed_to_the_allocation_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    a, b = tmp_path / "a" / "fair-scheduler.xml", tmp_path / "b" / "fair-scheduler.xml"
    first, second = market_store_path(args(a)), market_store_path(args(b))
    assert first != second and all(p.startswith(str(tmp_path / "state" / "slotwise")) for p in (first, second))
    monkeypatch.chdir(tmp_path / "..")
    assert market_store_path(args(a.resolve())) == first  # the same file, however named: the same store
    assert market_store_path(args(a, event_log=str(tmp_path / "ev.jsonl"))) == str(tmp_path / "ev-market.sqlite")
    assert market_store_path(args(a, dp_store="x.sqlite")) == "x.sqlite"


def serve(config_text: str, market: Market, apps=()):
    core = PolicyCore(parse_allocations(config_text, "f.xml"),
                      EngineSettings(preemption=False, node_locality_delay=0, rack_locality_delay=0),
                      ManualClock(100.0), services={"market": market})
    follow_config(market, core._engine.config)
    core.handle_heartbeat(payload(nodes=[node("n1", "h1", "/r1", 4096, 4)], apps=list(apps), node="n1"))
    core.handle_update(payload())
    port = free_port()
    server = start_http(create_app(SchedulerService(core, ConfigStatus("f.xml")), AdminToken(TOKEN)),
                        "127.0.0.1", port)
    return server, f"http://127.0.0.1:{port}"


def test_a_console_shows_only_the_accounts_its_file_has(tmp_path):
    store = str(tmp_path / "shared.sqlite")  # as two serves shared the one per-host default before
    other = Market(MarketSettings(interval=10), SqliteStore(store))
    follow_config(other, parse_allocations(OTHER_MARKET, "o.xml"))
    other.add_budget("root.dp.carol", 500)
    for text, shown, hidden in ((PLAIN, [], ["root.dp.carol"]),
                                (MARKET, ["root.dp.alice", "root.dp.bob"], ["root.dp.carol"])):
        market = Market(MarketSettings(interval=10), SqliteStore(store))
        assert "root.dp.carol" in market.accounts  # the store holds the other serve's account
        server, url = serve(text, market, [app_entry("app_1", "alice", "root.dp.alice", 2)] if shown else [])
        try:
            html = httpx.get(f"{url}/").text
        finally:
            server.should_exit = True
        assert ('id="market"' in html) == bool(shown)
        assert all(f'data-queue="{q}"' in html for q in shown)
        assert not any(f'data-queue="{q}"' in html for q in hidden)
