"""Test images made in-process (stdlib PNG writer), so no test needs an ffmpeg binary."""
import base64
import struct
import zlib

import numpy as np


def png_bytes(rgb: np.ndarray) -> bytes:
    h, w, _ = rgb.shape
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    raw = b"".join(b"\x00" + np.ascontiguousarray(row, np.uint8).tobytes() for row in rgb)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_card(w=320, h=180) -> np.ndarray:
    """Colour bars over a vertical gradient."""
    bars = np.array([[192, 192, 192], [192, 192, 0], [0, 192, 192], [0, 192, 0],
                     [192, 0, 192], [192, 0, 0], [0, 0, 192]], np.float64)
    img = bars[(np.arange(w) * len(bars)) // w][None].repeat(h, 0)
    img *= np.linspace(0.4, 1.0, h)[:, None, None]
    return img.astype(np.uint8)


def data_url(rgb: np.ndarray) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(rgb)).decode()
