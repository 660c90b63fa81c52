"""A Redis store's keys are its own: stores whose prefixes nest, or hold glob characters, keep apart."""

import redis

from winagg.store import RedisStore, StoredWindow


def _fill(store, size):
    """A window of items 0 .. size - 1 less the 40 oldest, flushed: (items left, their sum)."""
    with StoredWindow(store, "sum", buffer_size=8) as window:
        window.bulk_insert([float(i) for i in range(size)])
        window.evict_oldest(40)
    return size - 40, float(sum(range(40, size)))


def test_stores_whose_prefixes_nest_count_and_clear_only_their_own_keys(redis_port):
    # "n:1:..." and "n:b:..." start as the cells of "n" do, "n*" and "n?" would match them as patterns
    prefixes = ["n", "n:b", "n:1", "n:1:2", "n*", "n?", "n[:]"]
    expected = {p: _fill(RedisStore(port=redis_port, prefix=p), 100 + 37 * k) for k, p in enumerate(prefixes)}
    # the same windows alone, under prefixes that share nothing, say how many cells each holds
    alone = {}
    for k, p in enumerate(prefixes):
        _fill(RedisStore(port=redis_port, prefix=f"alone{k}"), 100 + 37 * k)
        with RedisStore(port=redis_port, prefix=f"alone{k}") as store:
            alone[p] = store.count()
    stores = {p: RedisStore(port=redis_port, prefix=p) for p in prefixes}
    assert {p: store.count() for p, store in stores.items()} == alone

    stores["n"].clear()
    assert stores["n"].count() == 0 and stores["n"].load_meta() is None
    assert {p: store.count() for p, store in stores.items() if p != "n"} == {p: alone[p] for p in prefixes[1:]}
    client = redis.Redis(port=redis_port)
    left = {key.decode() for key in client.scan_iter(match="n*")}
    # of "n", only the open store's lease is left
    assert {key for key in left if key.startswith("n:") and key.split(":")[1] not in ("b", "1")} == {"n:lease"}
    client.close()
    for p, store in stores.items():
        store.close()
        if p != "n":
            with StoredWindow(RedisStore(port=redis_port, prefix=p), "sum") as window:
                assert (len(window), window.query()) == expected[p]
