"""The market's records, as the ledger keeps them and the store saves them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Account:
    queue: str
    budget: float
    #: The rate asked for; it comes into force at the next interval.
    spending: float
    #: The rate in force this interval (what shares and charges use).
    rate: float
    #: The user who holds it (None: the user named like the queue).
    owner: str | None = None


@dataclass
class Charge:
    queue: str
    slots: float  # average slots used over the interval
    rate: float
    amount: float
    budget: float  # after the charge


@dataclass
class Interval:
    interval_id: int
    start: float
    end: float
    price: float
    charges: list[Charge] = field(default_factory=list)
