"""Image fetching/decoding and H.264 encoding, via urllib and PyAV.

PyAV's wheel (requirements.txt) bundles FFmpeg's libraries, libx264 included, so the artifact
brings everything: nothing is taken from the worker image's PATH (a PyTorch base image has no
ffmpeg binary). README.md, "Runs on the image it declares"."""
import base64
import binascii
import io
import tempfile
import urllib.error
import urllib.parse
import urllib.request

import av
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


def open_image(data: bytes) -> np.ndarray:
    """Decode the first picture of image bytes (PNG, JPEG, WebP, ...) to RGB uint8 (H, W, 3) at
    its own size (the model code resizes it); anything FFmpeg cannot read as a picture is an input
    error. Dimensions are checked before the pixels are decoded."""
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.video:
                raise InputError("image", "the URL does not point to a readable image")
            stream = container.streams.video[0]
            w, h = stream.codec_context.width, stream.codec_context.height
            if w < 2 or h < 2 or w * h > MAX_IMAGE_PIXELS:
                raise InputError("image", f"unsupported image dimensions {w}x{h}")
            frame = next(container.decode(stream), None)
            if frame is None:
                raise InputError("image", "the URL does not point to a readable image")
            return frame.to_ndarray(format="rgb24")
    except InputError:
        raise
    except (av.FFmpegError, ValueError):
        raise InputError("image", "the URL does not point to a readable image") from None


def encode_mp4(frames: np.ndarray, path: str, fps: int = 16, crf: int = 18) -> None:
    """frames uint8 (F, H, W, 3) → H.264 yuv420p mp4 at `fps` (H, W even), moov atom first."""
    f, h, w, _ = frames.shape
    with av.open(path, mode="w", format="mp4", options={"movflags": "+faststart"}) as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.options = {"crf": str(crf)}
        for i in range(f):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frames[i]), format="rgb24")
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))


def probe_video(path: str) -> dict:
    """{frames, width, height, fps, codec, pix_fmt} of the first video stream (frames counted by
    decoding)."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        frames = sum(1 for _ in container.decode(stream))
        ctx = stream.codec_context
        return {"frames": frames, "width": ctx.width, "height": ctx.height,
                "fps": float(stream.average_rate), "codec": ctx.name, "pix_fmt": ctx.pix_fmt}


def tempdir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="i2v-")
