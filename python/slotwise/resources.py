"""Resource vectors with named dimensions: YARN's memory and vcores, and
MRv1's map and reduce slots.

One type for both kinds of cluster: a YARN node has memory and vcores and
no slots, a TaskTracker map and reduce slots and no memory, so every rule
(fits, max share, fair share) is written once over all four dimensions.
Which dimensions a cluster uses is its kind (``KIND_DIMS``); the engine
offers them one group at a time (``offers``).
"""

from __future__ import annotations

#: Every dimension, in wire order.
ALL_DIMS = ("memory_mb", "vcores", "map_slots", "reduce_slots")
#: The dimensions of each kind of cluster (the shim's ``kind``).
KIND_DIMS = {"yarn": ("memory_mb", "vcores"), "mrv1": ("map_slots", "reduce_slots")}


class ContainerOffer:
    """What a YARN node offers on a heartbeat: one container, memory and
    vcores together, queues and apps ordered by memory as the Fair
    Scheduler orders them; delay scheduling holds it."""

    __slots__ = ()
    key = "memory_mb"  # the dimension that orders queues and apps for it
    dims = ("memory_mb", "vcores")  # what one container of it holds
    local = True  # apps wait for locality for it
    key_arg = None  # the policy hooks' key: none, as a plugin written for YARN only takes

    def has_room(self, free: "Resource") -> bool:
        return free.memory_mb > 0 and free.vcores > 0

    def at_max(self, usage: "Resource", cap: "Resource") -> bool:
        """A queue using ``usage`` under ``cap`` can take no more of it."""
        return usage.memory_mb >= cap.memory_mb or usage.vcores >= cap.vcores

    def fits(self, r: "Resource", free: "Resource") -> bool:
        """A container of ``r`` fits ``free``; one of no size would fit
        forever, so it never does (the door refuses it)."""
        return r.memory_mb <= free.memory_mb and r.vcores <= free.vcores and (r.memory_mb > 0 or r.vcores > 0)

    def asked(self, pending: "Resource") -> bool:
        """Pending asks want this offer."""
        return pending.memory_mb > 0 or pending.vcores > 0

    def order(self, policy, items: list, cluster: "Resource") -> list:
        """``items`` in ``policy``'s order for it (a plugin written for YARN
        only takes no key)."""
        return policy.order(items, cluster)

    def key_of(self, policy, item) -> float:
        """``item``'s key in a keyed ``policy``'s order for it."""
        return policy.order_key(item)


class SlotOffer:
    """What a TaskTracker offers on a heartbeat: its free slots of one kind,
    shared on their own as the MRv1 Fair Scheduler shares them."""

    __slots__ = ("key", "dims", "local", "key_arg")

    def __init__(self, key: str, local: bool) -> None:
        self.key = self.key_arg = key
        self.dims = (key,)
        self.local = local

    def has_room(self, free: "Resource") -> bool:
        return getattr(free, self.key) > 0

    def at_max(self, usage: "Resource", cap: "Resource") -> bool:
        return getattr(usage, self.key) >= getattr(cap, self.key)

    def fits(self, r: "Resource", free: "Resource") -> bool:
        return getattr(r, self.key) > 0 and r.fits_in(free)

    def asked(self, pending: "Resource") -> bool:
        return getattr(pending, self.key) > 0

    def order(self, policy, items: list, cluster: "Resource") -> list:
        return policy.order(items, cluster, self.key)

    def key_of(self, policy, item) -> float:
        return policy.order_key(item, self.key)

    def __reduce__(self):
        return (SlotOffer, (self.key, self.local))


#: What a node offers, by kind, one after the other (filled in below the
#: Resource class). A YARN node offers a container; a TaskTracker map slots,
#: then reduce slots, and only maps wait for locality (a reduce reads no
#: split).
OFFERS: dict = {}
#: The dimensions one offer hands out, by the dimension that orders it.
OFFERED = {"memory_mb": ("memory_mb", "vcores"), "map_slots": ("map_slots",), "reduce_slots": ("reduce_slots",)}


def measure(amount: dict | None) -> float:
    """One number per amount: memory (MB) on YARN, slots (maps and reduces
    together) on MRv1; an unlimited amount counts as 0 (never drawn)."""
    if not amount:
        return 0.0
    if "map_slots" in amount:
        x = (amount.get("map_slots") or 0) + (amount.get("reduce_slots") or 0)
    else:
        x = amount.get("memory_mb") or 0
    return 0.0 if x == float("inf") else float(x)


class Resource:
    __slots__ = ALL_DIMS

    def __init__(self, memory_mb: float = 0, vcores: float = 0, map_slots: float = 0,
                 reduce_slots: float = 0) -> None:
        self.memory_mb = memory_mb
        self.vcores = vcores
        self.map_slots = map_slots
        self.reduce_slots = reduce_slots

    @classmethod
    def units(cls, n: float) -> "Resource":
        """n units of memory and vcores alike: tests' and benchmarks' YARN
        nodes and containers, sized in round numbers."""
        return cls(n, n)

    @classmethod
    def of(cls, values: dict) -> "Resource":
        return cls(*(values.get(d, 0) for d in ALL_DIMS))

    def __add__(self, o: "Resource") -> "Resource":
        return Resource(self.memory_mb + o.memory_mb, self.vcores + o.vcores,
                        self.map_slots + o.map_slots, self.reduce_slots + o.reduce_slots)

    def __sub__(self, o: "Resource") -> "Resource":
        return Resource(self.memory_mb - o.memory_mb, self.vcores - o.vcores,
                        self.map_slots - o.map_slots, self.reduce_slots - o.reduce_slots)

    def __mul__(self, k: float) -> "Resource":
        return Resource(self.memory_mb * k, self.vcores * k, self.map_slots * k, self.reduce_slots * k)

    __rmul__ = __mul__

    def __reduce__(self):
        """Pickled as its four numbers: the default for a class with slots goes
        through copyreg in Python, twice as slow (a shadow's start copy and
        its feed hold thousands)."""
        return Resource, self._t()

    def _t(self) -> tuple:
        return (self.memory_mb, self.vcores, self.map_slots, self.reduce_slots)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Resource) and self._t() == other._t()

    def __hash__(self) -> int:
        return hash(self._t())

    def __repr__(self) -> str:
        if self.map_slots or self.reduce_slots:
            return f"Resource({self.memory_mb!r}, {self.vcores!r}, {self.map_slots!r}, {self.reduce_slots!r})"
        return f"Resource({self.memory_mb!r}, {self.vcores!r})"

    def __str__(self) -> str:
        if (self.map_slots or self.reduce_slots) and not (self.memory_mb or self.vcores):
            return f"{_num(self.map_slots)} map slots, {_num(self.reduce_slots)} reduce slots"
        return f"{_num(self.memory_mb)} mb, {_num(self.vcores)} vcores"

    def fits_in(self, o: "Resource") -> bool:
        return (self.memory_mb <= o.memory_mb and self.vcores <= o.vcores
                and self.map_slots <= o.map_slots and self.reduce_slots <= o.reduce_slots)

    def any_positive(self) -> bool:
        return self.memory_mb > 0 or self.vcores > 0 or self.map_slots > 0 or self.reduce_slots > 0

    def min(self, o: "Resource") -> "Resource":
        return Resource(min(self.memory_mb, o.memory_mb), min(self.vcores, o.vcores),
                        min(self.map_slots, o.map_slots), min(self.reduce_slots, o.reduce_slots))

    def max(self, o: "Resource") -> "Resource":
        return Resource(max(self.memory_mb, o.memory_mb), max(self.vcores, o.vcores),
                        max(self.map_slots, o.map_slots), max(self.reduce_slots, o.reduce_slots))

    def clamp_zero(self) -> "Resource":
        return Resource(max(0, self.memory_mb), max(0, self.vcores), max(0, self.map_slots),
                        max(0, self.reduce_slots))

    def get(self, dim: str) -> float:
        return getattr(self, dim)

    def only(self, dims) -> "Resource":
        """This resource in ``dims``, 0 in the others."""
        return Resource.of({d: getattr(self, d) for d in dims})

    def to_dict(self, dims=KIND_DIMS["yarn"]) -> dict:
        return {d: getattr(self, d) for d in dims}


ZERO = Resource()

OFFERS.update({"yarn": (ContainerOffer(),),
               "mrv1": (SlotOffer("map_slots", True), SlotOffer("reduce_slots", False))})


def along(key: str, amount: float, total: "Resource") -> "Resource":
    """``amount`` of the dimension ``key`` (an offer's, resources.OFFERS);
    for a YARN container (memory) with vcores in the same proportion of
    ``total``, as policies that share by one number hand them out."""
    if key == "memory_mb":
        return Resource(amount, amount / total.memory_mb * total.vcores if total.memory_mb > 0 else 0.0)
    return Resource.of({key: amount})
DIMENSIONS = KIND_DIMS["yarn"]


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"
