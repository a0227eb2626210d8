#!/usr/bin/env python3
"""Every relative link in the tree's markdown resolves (a #heading too, on .md pages), and every file under docs/evidence/ is
linked from some markdown file, so a number the docs claim always leads to its log and no log
stays in the tree that nothing cites.

Usage: check-links.py ROOT        check the tree at ROOT (its git-tracked and unignored *.md)
       check-links.py --self-test  prove on a scratch tree that both checks can fail
"""
import os
import re
import subprocess
import sys
import tempfile
from urllib.parse import unquote

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML = re.compile(r"""<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.I)
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
EVIDENCE = "docs/evidence"
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def anchors(text):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats -1, -2."""
    seen, out, in_fence = {}, set(), False
    for line in text.splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        m = None if in_fence else HEADING.match(line)
        if not m:
            continue
        title = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda x: x.group(1) or "", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def repo_files(root):
    """The files git would ship: tracked, plus new ones not ignored. Falls back to a walk."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True).stdout
        return sorted({p for p in out.decode().split("\0")
                       if p and os.path.exists(os.path.join(root, p))})
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in (".git", "build", "node_modules")]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return sorted(files)


def links_of(text):
    """(line number, target) of every link outside fenced code and inline code spans."""
    in_fence = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        line = re.sub(r"(`+)(.+?)\1", "", line)
        for rx in (LINK, HTML, REFDEF):
            for m in rx.finditer(line):
                yield n, m.group(1)


def check(root):
    files = repo_files(root)
    present = set(files)
    problems, linked = [], set()
    for md in (f for f in files if f.endswith(".md")):
        with open(os.path.join(root, md), encoding="utf-8") as fh:
            text = fh.read()
        for n, target in links_of(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, mailto:
            if target.startswith("#"):
                if unquote(target[1:]).lower() not in anchors(text):
                    problems.append(f"{md}:{n}: link to {target}: no such heading on this page")
                continue
            path = unquote(target.split("#", 1)[0].split("?", 1)[0])
            resolved = os.path.normpath(os.path.join(os.path.dirname(md), path))
            full = os.path.join(root, resolved)
            if resolved.startswith("..") or not os.path.exists(full):
                problems.append(f"{md}:{n}: link to {target} does not resolve ({resolved})")
                continue
            linked.add(resolved)
            frag = target.split("#", 1)[1] if "#" in target else ""
            if frag and resolved.endswith(".md") and os.path.isfile(full):
                with open(full, encoding="utf-8") as th:
                    if unquote(frag).lower() not in anchors(th.read()):
                        problems.append(f"{md}:{n}: link to {target}: no heading '#{frag}' there")
    for f in files:
        if f.startswith(EVIDENCE + "/") and f not in linked:
            problems.append(f"{f}: under {EVIDENCE}/ but no markdown file links it "
                            "(link it where the claim it backs is made, or remove it)")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as t:
        os.makedirs(os.path.join(t, EVIDENCE))
        for name, body in {"README.md": "[ok](docs/a.md) [gone](docs/missing.md)\n"
                                        "```\n[in code](nowhere.md)\n```\n",
                           "docs/a.md": "# A page\n[log](evidence/cited.log) `[span](nowhere.md)`\n"
                                        "[here](#a-page) [there](../README.md#nothing)\n",
                           f"{EVIDENCE}/cited.log": "x", f"{EVIDENCE}/orphan.log": "x"}.items():
            with open(os.path.join(t, name), "w") as fh:
                fh.write(body)
        problems = check(t)
    want = ["README.md:1: link to docs/missing.md", f"{EVIDENCE}/orphan.log: under",
            "docs/a.md:3: link to ../README.md#nothing"]
    missing = [w for w in want if not any(p.startswith(w) for p in problems)]
    if missing or len(problems) != 3:
        print("self-test FAILED: got", problems, "missing", missing)
        return 1
    print("self-test: a broken link, a missing heading and an unlinked evidence file are caught")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    print("every relative link resolves; every evidence file is linked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
