"""The bench tests' checklist: each check prints one line, ok or FAIL with
what was seen, and the run fails if any did."""

failures = []


def check(condition, what, detail=""):
    print(("ok   " if condition else "FAIL ") + what + ("" if condition or not detail else f": {detail}"))
    if not condition:
        failures.append(what)


def verdict(name):
    """Prints how many checks failed; the exit status for the script."""
    print(f"{name}: {len(failures)} failed" if failures else f"{name}: all passed")
    return 1 if failures else 0
