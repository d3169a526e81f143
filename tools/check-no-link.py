#!/usr/bin/env python3
"""Fails when a library of a configured build depends on a forbidden one.

    check-no-link.py BUILD_ROOT LIBRARY FORBIDDEN CONSUMER

LIBRARY, FORBIDDEN and CONSUMER are Meson target names. It fails when one of
LIBRARY's objects compiles with an include directory inside FORBIDDEN's
source or build directory (FORBIDDEN's dependency object reached LIBRARY's
`dependencies`), or when CONSUMER, an executable that depends on LIBRARY
alone, links FORBIDDEN's file (LIBRARY's dependency object carries it). The
targets come from meson-info/intro-targets.json, the commands from
build.ninja, so nothing needs to be built.
"""
import json
import re
import shlex
import sys
from pathlib import Path


def target(targets, name):
    found = [t for t in targets if t["name"] == name]
    if len(found) != 1:
        sys.exit(f"expected one target named {name!r}, found {len(found)}")
    return found[0]


def edges(build_ninja):
    """(outputs, text) of every build statement, continuation and variable lines included."""
    text = re.sub(r"\$\n\s*", "", build_ninja.read_text(encoding="utf-8"))
    result = []
    for line in text.splitlines():
        if line.startswith("build "):
            head = line[len("build "):].replace("$ ", "\0").replace("$:", "\1")
            outputs = [o.replace("\0", " ").replace("\1", ":") for o in head.split(":", 1)[0].split()]
            result.append((outputs, [line]))
        elif line.startswith(" ") and result:
            result[-1][1].append(line)
    return [(outputs, "\n".join(lines)) for outputs, lines in result]


def include_dirs(text, build_root):
    for word in shlex.split(text.replace("\n", " "), posix=True):
        for flag in ("-I", "-isystem"):
            if word.startswith(flag) and len(word) > len(flag):
                yield (build_root / word[len(flag):]).resolve()


def inside(path, directory):
    return path == directory or directory in path.parents


def main():
    build_root = Path(sys.argv[1]).resolve()
    library_name, forbidden_name, consumer_name = sys.argv[2:5]
    targets = json.loads((build_root / "meson-info" / "intro-targets.json").read_text(encoding="utf-8"))
    library, forbidden, consumer = (target(targets, n) for n in (library_name, forbidden_name, consumer_name))
    relative = lambda t: Path(t["filename"][0]).resolve().relative_to(build_root).as_posix()
    library_file, forbidden_file, consumer_file = relative(library), relative(forbidden), relative(consumer)
    forbidden_dirs = [Path(forbidden["defined_in"]).resolve().parent, (build_root / forbidden_file).parent]

    bad = []
    statements = edges(build_root / "build.ninja")
    objects = [(o, text) for o, text in statements if o[0].startswith(library_file + ".p/")]
    if not objects:
        bad.append(f"no object of {library_name} ({library_file}) in build.ninja")
    for outputs, text in objects:
        for d in include_dirs(text, build_root):
            if any(inside(d, f) for f in forbidden_dirs):
                bad.append(f"{outputs[0]} compiles with -I{d}, a directory of {forbidden_name}")
    links = [text for o, text in statements if consumer_file in o]
    if len(links) != 1:
        bad.append(f"expected one link command for {consumer_name} ({consumer_file}), found {len(links)}")
    for text in links:
        if library_file not in text.split():
            bad.append(f"{consumer_name} does not link {library_file}: it no longer shows what {library_name} carries")
        if re.search(r"(^|[\s=])" + re.escape(forbidden_file) + r"(\s|$)", text):
            bad.append(f"{consumer_name}, which depends on {library_name} alone, links {forbidden_file}")

    for line in bad:
        print(line)
    print(f"checked {len(objects)} objects of {library_name} and the link of {consumer_name} "
          f"for {forbidden_name}: {len(bad)} problems")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
