"""The key-value store interface that a stored window keeps its tree levels in.

A store holds, per *level* (a small non-negative integer), values under
integer indices, plus one metadata blob. Values and the blob are bytes: the
window serialises partials itself, so a store never needs to know the
aggregation. Writes come in batches that the store applies as one unit
(:meth:`Store.write`), so a window reopened after a crash sees the state of
its last completed flush, never half of one.

One writer per window: a store holds its window's lock from construction to
:meth:`Store.close` (:mod:`winagg.store.locks`), so a second store of the same
window raises :class:`~winagg.StoreLockedError`, and it serves one
:class:`~winagg.store.StoredWindow` at a time (:meth:`Store.claim`).
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..core.errors import StoreLockedError

#: ``{level: {index: value}}``: the values one batch writes.
Puts = Mapping[int, Mapping[int, bytes]]
#: ``[(level, lo, hi)]``: index ranges ``lo .. hi - 1`` one batch deletes.
Deletes = Sequence[Tuple[int, int, int]]


class Store(ABC):
    """Keyed values per level, read one by one or by index range, written in atomic batches."""

    @abstractmethod
    def get_many(self, level: int, indices: Iterable[int]) -> List[Optional[bytes]]:
        """The values at ``indices`` of ``level`` (None where nothing is stored), in order."""

    @abstractmethod
    def get_range(self, level: int, lo: int, hi: int) -> Dict[int, bytes]:
        """Every stored value of ``level`` with ``lo <= index < hi``, as ``{index: value}``."""

    @abstractmethod
    def write(self, puts: Puts, deletes: Deletes = (), meta: Optional[bytes] = None) -> None:
        """Apply one batch atomically: the puts first, then the range deletes, then the blob."""

    @abstractmethod
    def load_meta(self) -> Optional[bytes]:
        """The metadata blob of the last batch that had one (None for a new store)."""

    @abstractmethod
    def count(self) -> int:
        """How many values the store holds over all levels (for tests and experiments)."""

    def is_empty(self) -> bool:
        """Whether the store holds no value (the blob aside)."""
        return self.count() == 0

    @abstractmethod
    def clear(self) -> None:
        """Delete every value and the blob."""

    def claim(self, window) -> None:
        """Make ``window`` the one window this store serves; StoreLockedError if another live one has it."""
        current = getattr(self, "_window", None)
        holder = None if current is None else current()
        if holder is not None and holder is not window:
            raise StoreLockedError(f"{self!r} already serves another window (one window per store): close that "
                                   f"window, or open a store of its own for this one")
        self._window = weakref.ref(window)  # a window dropped without close frees the store

    def close(self) -> None:
        """Release the window's lock and the connection; the data stays in the store."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
