"""What a test may say of a measured time: that the benchmark wrote one, never how large it is.

A run on a loaded machine, or a clock too coarse for a quick run, can measure 0 s (and an
infinite rate); timings are checked for being numbers, never for their size.
"""

import math


def is_measurement(text: str) -> bool:
    """True when ``text`` is a number a timer or a rate could give: >= 0 (infinite allowed), not NaN."""
    value = float(text)
    return not math.isnan(value) and value >= 0

