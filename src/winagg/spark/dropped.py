"""The count of events a streaming query drops, reported the way Spark reports a query's metrics.

A stateful processor that drops events (late, or without a time) says so in its output:
one row whose :data:`DROPPED_COLUMN` holds the count and whose other columns are null.
:func:`observe_dropped` takes those rows out of the stream and sums them per micro-batch
as a named observed metric (``DataFrame.observe``), so that Spark reports the count with
each micro-batch's progress, on a classic session and through Spark Connect alike
(``query.lastProgress["observedMetrics"][dropped.metric]``; ``dropped.of(query.lastProgress)``
reads its count on either kind of session).

:class:`DroppedEvents` keeps the running total of those metrics with a
``StreamingQueryListener`` (which Spark Connect runs in the client too), so no
``sparkContext`` (accumulators) is needed.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Optional

import pandas as pd

#: The processors' column for a count of dropped events (null on the rows of results).
DROPPED_COLUMN = "__winagg_dropped"
#: The field of the observed metric that holds a micro-batch's count.
EVENTS_FIELD = "events"
#: How long :attr:`DroppedEvents.value` waits for the last progress of a query that has ended.
SETTLE_SECONDS = 60.0

_numbers = itertools.count(1)


def with_dropped_column(schema):
    """A processor's output schema: ``schema``'s fields, nullable (a count row has nulls in them),
    and :data:`DROPPED_COLUMN`."""
    from pyspark.sql.types import LongType, StructField, StructType

    fields = [StructField(f.name, f.dataType, True, f.metadata) for f in schema.fields]
    return StructType(fields + [StructField(DROPPED_COLUMN, LongType(), True)])


def dropped_row(count: int, columns) -> pd.DataFrame:
    """The row a processor emits for ``count`` dropped events: ``columns`` null, then the count."""
    row = pd.DataFrame({column: pd.Series([None], dtype=object) for column in columns})
    row[DROPPED_COLUMN] = pd.Series([count], dtype="int64")
    return row


def with_no_count(frame: pd.DataFrame) -> pd.DataFrame:
    """A processor's frame of results with its :data:`DROPPED_COLUMN` (null: no count)."""
    return frame.assign(**{DROPPED_COLUMN: pd.Series([None] * len(frame), dtype=object, index=frame.index)})


def observe_dropped(stream, dropped: Optional["DroppedEvents"] = None):
    """``(results, dropped)``: ``stream`` (a processor's output) without its count rows and without
    :data:`DROPPED_COLUMN`, the counts observed as ``dropped.metric`` (a new :class:`DroppedEvents`
    on the stream's session unless one is given)."""
    from pyspark.sql import functions as F

    if dropped is None:
        dropped = DroppedEvents(stream.sparkSession)
    count = stream[DROPPED_COLUMN]
    observed = stream.observe(dropped.metric, F.coalesce(F.sum(count), F.lit(0)).cast("long").alias(EVENTS_FIELD))
    return observed.where(count.isNull()).drop(DROPPED_COLUMN), dropped


class DroppedEvents:
    """The count of events a streaming query dropped: late (behind the watermark) or without a time.

    Each micro-batch's count is the observed metric named :attr:`metric` in the
    query's progress (``query.lastProgress["observedMetrics"][metric]``, and
    ``event.progress.observedMetrics`` in a ``StreamingQueryListener``), on a
    classic session and on Spark Connect alike; :meth:`of` reads it. :attr:`value` is the total over
    the micro-batches of every query run from this stream in this process; a
    micro-batch run again (a query resumed from its checkpoint) counts once.
    The count is kept by a listener on the session: :meth:`close` removes it
    (through Spark Connect the listener runs in a thread of the client that
    keeps the process running until :meth:`close` or ``spark.stop()``).
    """

    def __init__(self, spark):
        self.metric = f"winagg_dropped_{next(_numbers)}"
        self._metrics = [self.metric]
        self._spark = spark
        self._batches = {}  # (query id, batch id) -> events dropped
        self._running = set()  # run ids of queries started and not yet reported ended
        self._changed = threading.Condition()
        self._listener = _listener_class()(self)
        spark.streams.addListener(self._listener)

    def observe_untimed(self, df, time: str):
        """``df`` without its rows whose ``time`` is null, counted as dropped (in the observed metric
        ``metric + "_untimed"``): for a stream whose rows are combined before the stateful operator."""
        from pyspark.sql import functions as F

        name = f"{self.metric}_untimed"
        if name not in self._metrics:
            self._metrics.append(name)
        untimed = F.when(df[time].isNull(), F.lit(1)).otherwise(F.lit(0))
        counted = df.observe(name, F.coalesce(F.sum(untimed), F.lit(0)).cast("long").alias(EVENTS_FIELD))
        return counted.where(counted[time].isNotNull())

    @property
    def value(self) -> int:
        """The events dropped so far. A query that has ended is counted to its last micro-batch
        (the listener hears of it a moment after the query ends: this waits for that)."""
        deadline = time.monotonic() + SETTLE_SECONDS
        with self._changed:
            while True:
                active = {str(query.runId) for query in self._spark.streams.active} if self._running else set()
                if not (self._running - active):
                    return sum(self._batches.values())
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the progress of an ended streaming query did not reach the listener "
                                       f"counting {self.metric} within {SETTLE_SECONDS:.0f} s")
                self._changed.wait(0.1)

    def of(self, progress) -> Optional[int]:
        """The events one micro-batch dropped, from its progress (``query.lastProgress``, an entry of
        ``query.recentProgress`` or a listener's ``event.progress``); None if it has no such metric.
        It sums :attr:`metric` and, where rows are counted before the stateful operator (hopping
        windows of panes), ``metric + "_untimed"``.

        Through Spark Connect, PySpark hands a progress' observed metric over as
        ``Row(values=[...], schema={...})``; this reads that shape as well as a classic ``Row``.
        """
        metrics = progress["observedMetrics"] if isinstance(progress, dict) else progress.observedMetrics
        rows = [metrics[name] for name in self._metrics if name in (metrics or {})]
        return sum(_events(row) for row in rows) if rows else None

    def close(self) -> None:
        """Stop counting: remove the listener from the session."""
        self._spark.streams.removeListener(self._listener)

    def _started(self, run_id) -> None:
        with self._changed:
            self._running.add(str(run_id))
            self._changed.notify_all()

    def _progress(self, progress) -> None:
        count = self.of(progress)
        if count is None:
            return
        with self._changed:
            self._batches[(str(progress.id), progress.batchId)] = count
            self._changed.notify_all()

    def _ended(self, run_id) -> None:
        with self._changed:
            self._running.discard(str(run_id))
            self._changed.notify_all()

    def __repr__(self) -> str:
        return f"DroppedEvents(metric={self.metric!r})"


def _events(row) -> int:
    """The count in one observed metric's row."""
    fields = row.asDict() if hasattr(row, "asDict") else dict(row)
    if EVENTS_FIELD not in fields and {"values", "schema"} <= set(fields):
        names = [field["name"] for field in fields["schema"]["fields"]]
        fields = dict(zip(names, fields["values"]))
    return int(fields[EVENTS_FIELD] or 0)


def _listener_class():
    from pyspark.sql.streaming import StreamingQueryListener

    class DroppedListener(StreamingQueryListener):
        """Hands a session's query events to one :class:`DroppedEvents`."""

        def __init__(self, counter: DroppedEvents):
            self.counter = counter

        def onQueryStarted(self, event) -> None:
            self.counter._started(event.runId)

        def onQueryProgress(self, event) -> None:
            self.counter._progress(event.progress)

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            self.counter._ended(event.runId)

    return DroppedListener
