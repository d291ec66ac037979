#!/usr/bin/env python3
"""The layering rules of src/, checked on the source text (tests/cli/test_layers.sh runs it).

1. Floors. Every folder of src/ sits on a floor; a file may include only from its own floor or
   below (includes are spelled from src/, "providers/gt_provider.h", or relative to the file,
   "gt_x.h", "../gt_wg.cuh"; includes that resolve outside src/ are not layering):
     1 core   2 platform, kernels   3 providers   4 harness, verify   5 search, runtime   6 tools
   core, on the bottom floor, includes nothing from another folder at all.
2. Providers answer for themselves. Outside src/providers/ and src/kernels/ no string literal is
   a provider's name (read from the providers' table entries, `.name = "..."` or the positional
   C++ form) and none contains an own-kernel family prefix (gt_<arch>_, from the generator's
   data and the generated instance names). Comments may name anything.

Usage: check_layers.py SRC_ROOT   (the folder holding src/). Exit 0 clean, 1 on a violation
(each printed as "path:line: what"), 2 when the tree cannot be read.
"""
import json
import os
import re
import sys

FLOORS = {
    "core": 1,
    "platform": 2, "kernels": 2,
    "providers": 3,
    "harness": 4, "verify": 4,
    "search": 5, "runtime": 5,
    "tools": 6,
}
# Where provider names and kernel prefixes belong.
OWNERS = ("providers", "kernels")

# String literals outside the owners that equal a provider name but do not mean the provider.
# Each entry: (literal, files it may appear in, reason).
EXCEPTIONS = [
    ("cpu", {"src/core/gt_problem.c", "src/harness/host.c", "src/tools/cmd_check.c",
             "src/tools/cmd_shapes.c", "src/tools/cmd_tune.c", "src/tools/cmd_report.c",
             "src/tools/report_html.c"},
     'the arch of host devices is also spelled "cpu" (gt_problem_t.arch, the host harness)'),
    ("cpu", {"src/tools/cli.c"},
     'the --cpu option and --backend cpu select the host backend, not the cpu provider'),
]

SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".cc", ".cpp", ".hpp", ".in")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def source_files(src):
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(SOURCE_EXT):
                yield os.path.join(root, f)


def folder_of(src, path):
    rel = os.path.relpath(path, src)
    return rel.split(os.sep)[0] if os.sep in rel else None


def strip_comments(text):
    """The text with comments blanked (newlines kept, so line numbers hold) and a list of
    (line, literal) for every string literal."""
    out, lits = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            chunk = text[i:j]
            out.append("".join(ch if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = j
        elif c in "\"'":
            j, buf = i + 1, []
            while j < n and text[j] != c and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n:
                    buf.append(text[j:j + 2])
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            if c == '"':
                lits.append((line, "".join(buf)))
            out.append(text[i:j + 1])
            i = j + 1
        else:
            if c == "\n":
                line += 1
            out.append(c)
            i += 1
    return "".join(out), lits


def provider_names(src):
    names = set()
    named = re.compile(r'\.name\s*=\s*"([^"]+)"')
    positional = re.compile(r'gt_provider_t\s+\w+\s*=\s*\{\s*GT_PROVIDER_API_VERSION\s*,\s*"([^"]+)"')
    for path in source_files(os.path.join(src, "providers")):
        code, _ = strip_comments(open(path, encoding="utf-8", errors="replace").read())
        names.update(named.findall(code))
        names.update(positional.findall(code))
    return names


def kernel_prefixes(src):
    """gt_<arch>_ for every arch the generator's data names and every generated instance's."""
    prefixes = set()
    kdir = os.path.join(src, "kernels")

    def archs(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("arch", "archs"):
                    # A family's list of architectures, or the table of them (keyed by token).
                    for a in (v if isinstance(v, list) else list(v) if isinstance(v, dict) else [v]):
                        if isinstance(a, str):
                            yield a
                else:
                    yield from archs(v)
        elif isinstance(node, list):
            for v in node:
                yield from archs(v)

    space = os.path.join(kdir, "space.json")
    if os.path.exists(space):
        for a in archs(json.load(open(space))):
            prefixes.add("gt_%s_" % a.replace("_", ""))
    gen = os.path.join(kdir, "generated")
    if os.path.isdir(gen):
        for f in os.listdir(gen):
            text = open(os.path.join(gen, f), encoding="utf-8", errors="replace").read()
            for m in re.finditer(r'"(gt_[A-Za-z0-9]+_)[A-Za-z0-9_]*"', text):
                prefixes.add(m.group(1))
    return prefixes


def resolve(src, path, inc):
    """The src/ folder an include names, or None when it is not from src/."""
    local = os.path.normpath(os.path.join(os.path.dirname(path), inc))
    if os.path.exists(local):
        rel = os.path.relpath(local, src)
        if rel.startswith(".."):
            return None
        return rel.split(os.sep)[0] if os.sep in rel else None
    first = inc.split("/")[0]
    return first if "/" in inc and first in FLOORS else None


def check(root):
    src = os.path.join(root, "src")
    if not os.path.isdir(src):
        print("layers: no src/ under %s" % root)
        return 2
    bad = []
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for d in folders:
        if d not in FLOORS:
            bad.append("src/%s: a folder on no floor (add it to FLOORS in %s)" % (d, __file__))
    names = provider_names(src)
    prefixes = kernel_prefixes(src)
    if not names or not prefixes:
        print("layers: found no provider names (%s) or kernel prefixes (%s)" % (names, prefixes))
        return 2
    allowed = {}
    for lit, files, _ in EXCEPTIONS:
        allowed.setdefault(lit, set()).update(files)

    for path in source_files(src):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        folder = folder_of(src, path)
        text = open(path, encoding="utf-8", errors="replace").read()
        code, lits = strip_comments(text)
        if folder in FLOORS:
            for m in INCLUDE_RE.finditer(code):
                to = resolve(src, path, m.group(1))
                if not to or to == folder or to not in FLOORS:
                    continue
                line = code.count("\n", 0, m.start()) + 1
                if folder == "core":
                    bad.append('%s:%d: core includes "%s" from src/%s/: core includes nothing '
                               'from another folder' % (rel, line, m.group(1), to))
                elif FLOORS[to] > FLOORS[folder]:
                    bad.append('%s:%d: %s (floor %d) includes "%s" from %s (floor %d), a floor '
                               'above' % (rel, line, folder, FLOORS[folder], m.group(1), to,
                                          FLOORS[to]))
        if folder in OWNERS:
            continue
        for line, lit in lits:
            if lit in names and rel not in allowed.get(lit, ()):
                bad.append('%s:%d: the string "%s" names a provider (ask the provider table)'
                           % (rel, line, lit))
            for p in sorted(prefixes):
                if p in lit:
                    bad.append('%s:%d: the string "%s" holds the kernel family prefix %s (ask '
                               'the provider table)' % (rel, line, lit, p))
    for b in bad:
        print(b)
    print("layers: %d files, floors %s, providers %s, kernel prefixes %s: %d violation%s" % (
        sum(1 for _ in source_files(src)),
        " ".join("%s=%d" % (d, FLOORS[d]) for d in folders if d in FLOORS),
        ",".join(sorted(names)), ",".join(sorted(prefixes)), len(bad), "" if len(bad) == 1 else "s"))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(check(sys.argv[1]))
