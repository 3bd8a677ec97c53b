#!/usr/bin/env bash
# Prepares the folder WAN_REFERENCE names for test_parity.py's live reference runs, outside the
# repository (reference code is never committed): the `wan/` packages of the model authors' Wan2.2
# and of Wan2.2-Lightning, MagCache's Wan2.2 script, and the pip packages they import that a CPU
# machine with Debian's torch lacks (into <dest>/deps; torch itself is the system's).
#
#   bash tests/reference_setup.sh <dest> <Wan2.2 git dir> <Wan2.2-Lightning git dir> <MagCache git dir>
#   WAN_REFERENCE=<dest> /usr/bin/python3 -m pytest -q tests/test_parity.py      # live
#   WAN_REFERENCE=<dest> WAN_PARITY_RECORD=1 /usr/bin/python3 -m pytest -q tests/test_parity.py  # re-record
#
# The git dirs are clones (or bare mirrors) of github.com/Wan-Video/Wan2.2,
# github.com/ModelTC/Wan2.2-Lightning and github.com/Zehong-Ma/MagCache; the recorded fixtures
# came from commits 42bf4cf (Wan2.2), 92efeb4 (Lightning) and df81cb1 (MagCache).
set -euo pipefail
dest=$1 wan22=$2 lightning=$3 magcache=$4
mkdir -p "$dest/wan22" "$dest/lightning" "$dest/magcache"
git -C "$wan22" archive HEAD wan | tar -x -C "$dest/wan22"
git -C "$lightning" archive HEAD wan | tar -x -C "$dest/lightning"
git -C "$magcache" archive HEAD MagCache4Wan2.2/magcache_generate.py | tar -x -C "$dest/magcache"
/usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest/deps" \
  diffusers==0.30.3 huggingface_hub==0.24.7 importlib_metadata zipp filelock easydict tqdm \
  safetensors==0.4.5 einops ftfy wcwidth regex imageio
