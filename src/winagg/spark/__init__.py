"""winagg inside Apache Spark: sliding windows on DataFrames, batch and streaming.

``pyspark`` is imported only when a function that needs it is called, so
``winagg.spark.partition`` (the per-partition engine) works without Spark.
"""

from ..extras import require

require("pyarrow", "spark", "winagg.spark")  # every module here moves data as Arrow

from ._common import SparkInputError  # noqa: E402
from .batch import sliding  # noqa: E402
from .session import session  # noqa: E402
from .dropped import DroppedEvents  # noqa: E402
from .streaming import sliding_stream  # noqa: E402

__all__ = ["sliding", "sliding_stream", "session", "SparkInputError", "DroppedEvents"]
