"""A hostile worker's half of the volume race (issue 26), run by test/platform/volume-race.test.ts.

In the volume's folder, swaps a real entry with a hostile one as fast as it can with
renameat2(RENAME_EXCHANGE), for a bounded time, while the test calls the S3 API on the same keys:
  dir:  `race/` (a folder) <-> a symlink to `target` (a host folder, or another volume's folder)
  fifo: `race/file` (a regular file) <-> a FIFO
Prints the number of swaps made. Usage: _rename_race.py <volume dir> <dir|fifo> <target> <seconds>
"""
import ctypes
import os
import sys
import time

RENAME_EXCHANGE = 2
AT_FDCWD = -100

volume, mode, target, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = libc.renameat2
renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]

if mode == "dir":
    real, hostile = os.path.join(volume, "race"), os.path.join(volume, "race-swap")
    os.makedirs(real, exist_ok=True)
    os.symlink(target, hostile)
else:
    os.makedirs(os.path.join(volume, "race"), exist_ok=True)
    real, hostile = os.path.join(volume, "race", "file"), os.path.join(volume, "race", "file-swap")
    with open(real, "wb") as f:
        f.write(b"x" * 1024)
    os.mkfifo(hostile)

a, b = real.encode(), hostile.encode()
swaps = 0
deadline = time.monotonic() + seconds
print("ready", flush=True)
while time.monotonic() < deadline:
    if renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) == 0:
        swaps += 1
    elif ctypes.get_errno() == 2 and mode == "dir":  # a Delete emptied and removed the real folder
        os.makedirs(real if os.path.lexists(hostile) else hostile, exist_ok=True)
    else:
        raise OSError(ctypes.get_errno(), "renameat2")
# leave the real entry in place, and let go of anyone blocked opening the FIFO (as a writer would)
if os.path.islink(real) or (mode == "fifo" and not os.path.isfile(real)):
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
if mode == "fifo":
    for _ in range(50):
        try:
            os.close(os.open(hostile, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        time.sleep(0.01)
print(swaps, flush=True)
