"""CRC-32C (Castagnoli), table-driven, and the masked form TFRecord stores: of one byte string in plain
Python (what sniffing a file's first record needs), or of many records at once with numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

_POLY = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _make_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _make_table()


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data``.

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """The masked CRC that TFRecord stores (so that a CRC over CRCs is not degenerate)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c_columns(cols: np.ndarray) -> np.ndarray:
    """Masked CRC-32C of every column of ``cols`` (shape ``(length, n)``, uint8): one numpy
    step per byte position, over all n records at once."""
    import numpy as np  # here, not at the top: sniffing a file's first bytes needs only the table

    crc = np.full(cols.shape[1], 0xFFFFFFFF, dtype=np.uint32)
    table = np.array(_TABLE, dtype=np.uint32)
    eight = np.uint32(8)
    for col in cols:
        crc = table[crc.astype(np.uint8) ^ col] ^ (crc >> eight)
    crc ^= np.uint32(0xFFFFFFFF)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)
