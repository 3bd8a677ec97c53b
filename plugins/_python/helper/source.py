"""A file's bytes as Python reads them, and the user errors the helper reports back."""
import io
import tokenize


class Problem(Exception):
    """A user error in one file, reported back with a code the TypeScript side maps to the catalogue."""

    def __init__(self, code, line, message, **extra):
        super().__init__(message)
        self.payload = dict(code=code, line=line, message=message, **extra)


def decode_source(data):
    """Bytes → text the way Python reads a source file (BOM and coding cookie honoured)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise Problem("PYTHON_SYNTAX", 1, "cannot decode the file: %s" % error)
