"""Allocation files: the model, the two parsers (YARN and MRv1) and the loader.

Parsing and validation live here, apart from the engine, so the engine only
ever sees a complete, valid ``AllocationConfig``.
"""

from .errors import ConfigError, ConfigErrors
from .model import (
    AllocationConfig,
    PlacementRule,
    QueueConfig,
    ResourceSpec,
    UserConfig,
    default_config,
)
from .loader import load_allocations, parse_allocations

__all__ = [
    "AllocationConfig",
    "ConfigError",
    "ConfigErrors",
    "PlacementRule",
    "QueueConfig",
    "ResourceSpec",
    "UserConfig",
    "default_config",
    "load_allocations",
    "parse_allocations",
]
