"""winagg inside Apache Spark: sliding windows on DataFrames, batch and streaming.

``pyspark`` is imported only when a function that needs it is called, so
``winagg.spark.partition`` (the per-partition engine) works without Spark.
"""

from .batch import SparkInputError, sliding
from .session import session

__all__ = ["sliding", "session", "SparkInputError"]
