#!/usr/bin/env python3
"""Prints the public headers under an include directory as '<remat/...>' paths, one per line."""
import sys
from pathlib import Path

root = Path(sys.argv[1])
for path in sorted(root.rglob("*.hpp")):
    rel = path.relative_to(root).as_posix()
    if "/detail/" in rel:
        continue  # internals are checked through the public headers that include them
    print(rel)
