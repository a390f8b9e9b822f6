"""Dynamic Priority: a market for slots (budgets, spending rates, a price),
its store, its signed REST API and its ACL.  The scheduling side is the
``dynamic-priority`` policy (slotwise.policies.dynamic_priority)."""

from .ledger import Market, MarketError, MarketSettings
from .records import Account, Charge, Interval
from .store import MemoryStore, SqliteStore

__all__ = ["Account", "Charge", "Interval", "Market", "MarketError", "MarketSettings", "MemoryStore",
           "SqliteStore"]
