"""Requirement lines as pip reads them, by pip's own vendored `packaging`."""
import re
import sys

def parse_requirement(line):
    """One requirement line (no pip options or comments) as pip reads it, by pip's own vendored
    `packaging`: {"name" (PEP 503), "written" (as written), "extras", "specifiers", "marker"?, "url"?},
    extras and specifiers in the order written. A bare wheel or sdist URL or path is named from its
    file name (or `#egg=`); None when the line names no project."""
    try:
        from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
        from pip._vendor.packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
    except ImportError:
        raise RuntimeError("pip is not installed for %s (svc reads requirements with pip's packaging and installs them with pip): "
                           "python3 -m ensurepip, or apt-get install python3-pip" % sys.executable)

    try:
        req = Requirement(line)
    except InvalidRequirement:
        return bare_url_requirement(line, canonicalize_name, parse_wheel_filename, parse_sdist_filename)
    compact = re.sub(r"\s+", "", line)
    position = lambda text: compact.find(text) if text in compact else len(compact)
    result = {
        "name": canonicalize_name(req.name),
        "written": req.name,
        "extras": sorted(req.extras, key=position),
        "specifiers": sorted((spec.operator + spec.version for spec in req.specifier), key=position),
    }
    if req.marker is not None:
        result["marker"] = str(req.marker)
    if req.url:
        result["url"] = req.url
    return result


def bare_url_requirement(line, canonicalize_name, parse_wheel_filename, parse_sdist_filename):
    """`https://…/pkg-1.0-py3-none-any.whl`, `./dist/pkg-1.0.tar.gz`, `git+https://…#egg=pkg`."""
    text, _, marker = line.partition(" ;") if "://" in line else line.partition(";")
    text = text.strip()
    egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", text)
    name = egg.group(1) if egg else None
    if name is None:
        filename = text.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        try:
            name = parse_wheel_filename(filename)[0] if filename.endswith(".whl") else parse_sdist_filename(filename)[0]
        except Exception:  # packaging's InvalidWheelFilename / InvalidSdistFilename: no project named
            return None
    result = {"name": canonicalize_name(name), "written": canonicalize_name(name), "extras": [], "specifiers": [], "url": text}
    if marker.strip():
        result["marker"] = marker.strip()
    return result
