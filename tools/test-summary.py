#!/usr/bin/env python3
"""Ends a test run with one line CI readers recognise: "tests: N passed, N failed, N skipped".

Reads meson's testlog.json. Where a test printed a doctest summary its test
cases are counted one by one; other tests count as one each.
Usage: test-summary.py BUILDDIR
"""
import json
import re
import sys
from pathlib import Path

DOCTEST = re.compile(r"\[doctest\] test cases:\s*(\d+) \|\s*(\d+) passed \|\s*(\d+) failed \|\s*(\d+) skipped")

passed = failed = skipped = 0
log = Path(sys.argv[1] if len(sys.argv) > 1 else "build") / "meson-logs" / "testlog.json"
for line in log.read_text(encoding="utf-8").splitlines():
    t = json.loads(line)
    result = t["result"]
    m = DOCTEST.search(t.get("stdout") or "")
    if m:
        p, f, s = int(m.group(2)), int(m.group(3)), int(m.group(4))
        passed, failed, skipped = passed + p, failed + f, skipped + s
        if result not in ("OK", "SKIP", "EXPECTEDFAIL") and f == 0:
            failed += 1  # crashed or timed out after doctest printed
    elif result in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif result == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
