"""Image fetching/decoding and H.264 encoding, via urllib and the ffmpeg/ffprobe binaries."""
import base64
import binascii
import json
import os
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from .inputs import InputError

MAX_IMAGE_BYTES = 20 * 1024 * 1024
FETCH_TIMEOUT_S = 30
MAX_IMAGE_PIXELS = 64 * 1024 * 1024  # refuse decompression bombs before decoding


def fetch_image(url: str, max_bytes: int = MAX_IMAGE_BYTES, timeout: float = FETCH_TIMEOUT_S) -> bytes:
    """Bytes of an http(s) or data: URL, with size and time limits (errors name the field)."""
    if url.lower().startswith("data:"):
        head, sep, payload = url.partition(",")
        if not sep:
            raise InputError("image", "Invalid image URL: malformed data: URL")
        try:
            data = (base64.b64decode(payload, validate=True) if head.lower().endswith(";base64")
                    else urllib.parse.unquote_to_bytes(payload))
        except (binascii.Error, ValueError):
            raise InputError("image", "Invalid image URL: bad base64 in data: URL") from None
        if len(data) > max_bytes:
            raise InputError("image", f"image is larger than {max_bytes // (1024 * 1024)} MB")
        return data
    req = urllib.request.Request(url, headers={"User-Agent": "svc-image-to-video/1"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise InputError("image", f"image is larger than {max_bytes // (1024 * 1024)} MB")
            data = resp.read(max_bytes + 1)
    except InputError:
        raise
    except urllib.error.HTTPError as e:
        raise InputError("image", f"could not fetch the image: HTTP {e.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise InputError("image", f"could not fetch the image: {getattr(e, 'reason', e)}") from None
    if len(data) > max_bytes:
        raise InputError("image", f"image is larger than {max_bytes // (1024 * 1024)} MB")
    return data


def _run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, **kw)


class DecodedImage:
    def __init__(self, path: str, width: int, height: int):
        self.path, self.width, self.height = path, width, height

    def rgb(self) -> np.ndarray:
        """RGB uint8 (height, width, 3) at the image's own size (the model code resizes it)."""
        w, h = self.width, self.height
        r = _run(["ffmpeg", "-v", "error", "-i", self.path, "-frames:v", "1",
                  "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"], timeout=60)
        if r.returncode != 0 or len(r.stdout) != w * h * 3:
            raise InputError("image", "could not decode the image")
        return np.frombuffer(r.stdout, dtype=np.uint8).reshape(h, w, 3)


def open_image(data: bytes, workdir: str) -> DecodedImage:
    """Probe image bytes with ffprobe; anything it cannot read as one picture is an input error."""
    path = os.path.join(workdir, "input_image")
    with open(path, "wb") as f:
        f.write(data)
    r = _run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
              "stream=width,height,codec_type", "-of", "json", path], timeout=30)
    try:
        s = json.loads(r.stdout)["streams"][0]
        w, h = int(s["width"]), int(s["height"])
    except (ValueError, KeyError, IndexError):
        raise InputError("image", "the URL does not point to a readable image") from None
    if w < 2 or h < 2 or w * h > MAX_IMAGE_PIXELS:
        raise InputError("image", f"unsupported image dimensions {w}x{h}")
    return DecodedImage(path, w, h)


def encode_mp4(frames: np.ndarray, path: str, fps: int = 16) -> None:
    """frames uint8 (F, H, W, 3) → H.264 yuv420p mp4 (H, W even)."""
    f, h, w, _ = frames.shape
    cmd = ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
           "-r", str(fps), "-i", "pipe:0", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "18",
           "-movflags", "+faststart", path]
    r = subprocess.run(cmd, input=np.ascontiguousarray(frames).tobytes(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"ffmpeg failed: {r.stderr.decode(errors='replace')[-500:]}")


def probe_video(path: str) -> dict:
    """{frames, width, height, fps, codec} of the first video stream (frames counted by decoding)."""
    r = _run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
              "stream=codec_name,width,height,r_frame_rate,nb_read_frames,pix_fmt", "-of", "json", path])
    s = json.loads(r.stdout)["streams"][0]
    num, den = s["r_frame_rate"].split("/")
    return {"frames": int(s["nb_read_frames"]), "width": int(s["width"]), "height": int(s["height"]),
            "fps": float(num) / float(den), "codec": s["codec_name"], "pix_fmt": s.get("pix_fmt")}


def tempdir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="i2v-")
