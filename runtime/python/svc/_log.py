"""Worker log lines on stderr; the supervisor captures them per worker."""
import logging
import sys

logger = logging.getLogger("svc")


def setup() -> None:
    """Called by serve() only: importing svc in an app must not touch its logging."""
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s svc %(levelname)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # an app that configures the root logger would print every line twice
    # stdout is a pipe under the supervisor: line buffering makes the app's print() show up at once.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure:
            reconfigure(line_buffering=True)
