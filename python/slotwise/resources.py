"""Resource vectors in YARN's two dimensions.

MRv1-style slot clusters use the same type: one slot is ``Resource(1, 1)``, so
every computation in memory is also a computation in slots.
"""

from __future__ import annotations


class Resource:
    __slots__ = ("memory_mb", "vcores")

    def __init__(self, memory_mb: float = 0, vcores: float = 0) -> None:
        self.memory_mb = memory_mb
        self.vcores = vcores

    @classmethod
    def slots(cls, n: float) -> "Resource":
        return cls(n, n)

    def __add__(self, other: "Resource") -> "Resource":
        return Resource(self.memory_mb + other.memory_mb, self.vcores + other.vcores)

    def __sub__(self, other: "Resource") -> "Resource":
        return Resource(self.memory_mb - other.memory_mb, self.vcores - other.vcores)

    def __mul__(self, k: float) -> "Resource":
        return Resource(self.memory_mb * k, self.vcores * k)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Resource)
            and self.memory_mb == other.memory_mb
            and self.vcores == other.vcores
        )

    def __hash__(self) -> int:
        return hash((self.memory_mb, self.vcores))

    def __repr__(self) -> str:
        return f"Resource({self.memory_mb!r}, {self.vcores!r})"

    def __str__(self) -> str:
        return f"{_num(self.memory_mb)} mb, {_num(self.vcores)} vcores"

    def fits_in(self, other: "Resource") -> bool:
        return self.memory_mb <= other.memory_mb and self.vcores <= other.vcores

    def any_positive(self) -> bool:
        return self.memory_mb > 0 or self.vcores > 0

    def min(self, other: "Resource") -> "Resource":
        return Resource(min(self.memory_mb, other.memory_mb), min(self.vcores, other.vcores))

    def max(self, other: "Resource") -> "Resource":
        return Resource(max(self.memory_mb, other.memory_mb), max(self.vcores, other.vcores))

    def clamp_zero(self) -> "Resource":
        return Resource(max(0, self.memory_mb), max(0, self.vcores))

    def get(self, dim: str) -> float:
        return getattr(self, dim)

    def to_dict(self) -> dict:
        return {"memory_mb": self.memory_mb, "vcores": self.vcores}


ZERO = Resource(0, 0)
DIMENSIONS = ("memory_mb", "vcores")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"
