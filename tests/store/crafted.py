"""Crafted store contents: pickles that run code when plain ``pickle`` reads them, and checksummed codec bodies."""

import os
import pickle
import struct
import zlib


class _RunsCode:
    """Pickles as a call of ``action(*arguments)``, which plain ``pickle.loads`` makes."""

    def __init__(self, action, *arguments):
        self.action, self.arguments = action, arguments

    def __reduce__(self):
        return self.action, self.arguments


def crafted_pickles(marker) -> dict:
    """Pickles that create the file ``marker`` when unpickled with plain ``pickle``, by name."""
    return {"os.system": pickle.dumps(_RunsCode(os.system, f"touch '{marker}'")),
            "open": pickle.dumps(_RunsCode(open, str(marker), "w")),
            "inside a tuple": pickle.dumps((1.0, [_RunsCode(open, str(marker), "w")]))}


def with_checksum(body: bytes) -> bytes:
    """``body`` as :mod:`winagg.store.codec` stores it: followed by its CRC-32."""
    return body + struct.pack("<I", zlib.crc32(body))
