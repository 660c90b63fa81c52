"""Key-value store backing for the Monoid Tree Aggregator (paper 001).

:class:`StoredWindow` runs an ``amta`` or ``lmta`` window whose tree levels
live in a :class:`Store`: :class:`SQLiteStore` (embedded, a file; the
default choice) or :class:`RedisStore` (a Redis server). Local memory stays
O(log n) at millions of items, and a window reopened on the same store
continues where it stopped.

A store is what :mod:`winagg.store.codec` and :mod:`winagg.store.metadata`
wrote, as data: opening one runs no code from it, and a damaged one raises
:class:`StoreCorruptError`. One writer per window: a second store of a
window that is open raises :class:`StoreLockedError` (:mod:`winagg.store.locks`).
"""

from ..core.errors import StoreCorruptError, StoreLockedError
from .base import Store
from .redis_store import RedisStore
from .sqlite import SQLiteStore
from .stored_window import StoredWindow

__all__ = ["Store", "SQLiteStore", "RedisStore", "StoredWindow", "StoreCorruptError", "StoreLockedError"]
