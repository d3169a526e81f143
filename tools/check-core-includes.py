#!/usr/bin/env python3
"""Fails when a header under include/ pulls in CUDA or anything from backends/."""
import re
import sys
from pathlib import Path

FORBIDDEN = re.compile(r'#\s*include\s*[<"]([^>"]*(cuda|cudnn|cublas|thrust/|cub/|backends/)[^>"]*)[>"]')
root = Path(sys.argv[1])
bad = []
for path in sorted(root.rglob("*.hpp")):
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = FORBIDDEN.search(line)
        if m:
            bad.append(f"{path}:{number}: includes {m.group(1)}")
for line in bad:
    print(line)
print(f"checked {sum(1 for _ in root.rglob('*.hpp'))} headers: {len(bad)} forbidden includes")
sys.exit(1 if bad else 0)
