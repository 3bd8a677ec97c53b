import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(APP))
for p in (APP, os.path.join(REPO, "runtime", "python"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)
