"""Exceptions raised by winagg. Every one names the problem; none leaves an aggregator half-changed."""


class WinaggError(Exception):
    """Base class of every winagg error."""


class OutOfOrderError(WinaggError, ValueError):
    """A time older than the youngest one was given to an algorithm that needs in-order (FIFO) input."""


class EmptyWindowError(WinaggError, IndexError):
    """An eviction was asked of a window that holds no items."""


class InvalidTimeError(WinaggError, ValueError):
    """A time is NaN, NaT or None where a real time is required."""


class NotInvertibleError(WinaggError, TypeError):
    """An algorithm that subtracts on eviction was given a monoid without an inverse."""


class UnknownNameError(WinaggError, KeyError):
    """An algorithm or aggregation name that winagg does not know."""

    def __str__(self):  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class UnsupportedOperationError(WinaggError, NotImplementedError):
    """The algorithm does not offer this operation (for example a range query on a FIFO algorithm)."""


class StoreCorruptError(WinaggError, LookupError, ValueError):
    """A key-value store's contents cannot be the window it holds: a value or its metadata is missing,
    damaged, of the wrong type, or of another format (it was changed outside winagg, or written by
    another version)."""


class StoreLockedError(WinaggError, RuntimeError):
    """A stored window is already open for writing elsewhere (one writer per window)."""
