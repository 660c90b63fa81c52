"""An operation whose flush fails raises with the window as it was, so that its retry applies once."""

import random

import pytest

import winagg
from winagg.store import StoredWindow

from oracle import CONCAT, Reference


class _DiskFull(OSError):
    pass


def _failing(store_class):
    """``store_class`` whose next ``fail`` writes raise before they reach the store (a full disk, say)."""

    class Failing(store_class):
        fail = 0
        failed = 0

        def write(self, puts, deletes=(), meta=None):
            if self.fail:
                self.fail -= 1
                self.failed += 1
                raise _DiskFull("no space left on device")
            super().write(puts, deletes, meta)

    return Failing


def _steps(seed, count):
    """Operations on a window of times 0, 1, 2, ... (an item's time is its number)."""
    rng = random.Random(seed)
    items = 0
    for _ in range(count):
        roll = rng.random()
        if roll < 0.45:
            yield ("insert", items)
            items += 1
        elif roll < 0.6:
            batch = rng.randint(1, 9)
            yield ("bulk_insert", list(range(items, items + batch)))
            items += batch
        elif roll < 0.8:
            yield ("evict", None)
        elif roll < 0.9:
            yield ("evict_oldest", rng.randint(0, 12))
        else:
            yield ("bulk_evict", rng.randint(items - 15, items))


def _apply_to_reference(ref, step):
    kind, arg = step
    if kind == "insert":
        ref.insert(arg, arg)
    elif kind == "bulk_insert":
        ref.bulk_insert(arg, arg)
    elif kind == "bulk_evict":
        ref.bulk_evict(arg)
    else:
        for _ in range(min(1 if kind == "evict" else arg, len(ref))):
            ref.evict()


def _apply_to_window(window, step):
    kind, arg = step
    if kind == "insert":
        window.insert(arg, time=arg)
    elif kind == "bulk_insert":
        window.bulk_insert(arg, times=arg)
    elif kind == "evict":
        if len(window):
            window.evict()
    elif kind == "evict_oldest":
        window.evict_oldest(arg)
    else:
        window.bulk_evict(arg)


def _view(window):
    return len(window), window.query(), window.oldest_time(), window.youngest_time()


def test_an_operation_whose_flush_fails_leaves_the_window_as_it_was(backend):
    steps = list(_steps(11, 500))
    store = backend.open("w", store_class=_failing(backend.store_class))
    window = StoredWindow(store, CONCAT, buffer_size=4, refill=2)
    ref = Reference(CONCAT)
    rng = random.Random(3)
    for i, step in enumerate(steps):
        before = _view(window)
        store.fail = rng.choice([0, 0, 1, 2])  # 2: the first retry fails too
        while True:
            try:
                _apply_to_window(window, step)
                break
            except _DiskFull:
                assert _view(window) == before, f"step {i} {step}"
        _apply_to_reference(ref, step)
        assert _view(window) == _view(ref), f"step {i} {step}"
    assert store.failed > 50  # the failures happened, on flushes of every kind of operation
    store.fail = 0
    window.close()

    # what reached the store is the window: reopened, it answers as the reference, and it holds
    # exactly the cells of the same window built without a failure
    with StoredWindow(backend.open("w"), CONCAT, buffer_size=4, refill=2) as reopened:
        assert _view(reopened) == _view(ref)
    with StoredWindow(backend.open("clean"), CONCAT, buffer_size=4, refill=2) as clean:
        for step in steps:
            _apply_to_window(clean, step)
    with backend.open("w") as failed_store, backend.open("clean") as clean_store:
        assert failed_store.count() == clean_store.count()


def test_a_flush_that_fails_can_be_called_again(backend):
    store = backend.open("w", store_class=_failing(backend.store_class))
    window = StoredWindow(store, "sum", buffer_size=64)
    window.bulk_insert([1.0, 2.0, 4.0])
    store.fail = 1
    with pytest.raises(_DiskFull):
        window.close()
    assert (len(window), window.query()) == (3, 7.0)
    window.close()
    with StoredWindow(backend.open("w"), "sum") as again:
        assert (len(again), again.query()) == (3, 7.0)
