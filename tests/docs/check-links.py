#!/usr/bin/env python3
"""Every relative link in the tree's markdown resolves (a #heading too, on .md pages), and every
file under docs/evidence/ is cited by a page: linked from a markdown file outside docs/evidence/,
or from an evidence report (.md under docs/evidence/) that a page cites in turn. So a number the
docs claim always leads to its log, and no log stays in the tree that nothing cites. A tree with
no markdown or no evidence file fails too: the check must have something to check.

Usage: check-links.py ROOT        check the tree at ROOT (its git-tracked and unignored files)
       check-links.py --self-test  prove on a scratch tree (a temporary folder) that each check
                                   can fail
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
    """The files git would ship: tracked, plus new ones not ignored. Falls back to a walk where
    ROOT is not the top of a git work tree (the self-test's scratch tree)."""
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"], check=True,
                             capture_output=True).stdout.decode().strip()
        if os.path.realpath(top) != os.path.realpath(root):
            raise ValueError(f"{root} is inside the work tree {top}, not its top")
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True).stdout
        return sorted({p for p in out.decode().split("\0")
                       if p and os.path.exists(os.path.join(root, p))})
    except (OSError, ValueError, subprocess.CalledProcessError):
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


def is_evidence(path):
    return path.startswith(EVIDENCE + "/")


def check(root):
    """(problems, counts): every broken link and every evidence file no page cites."""
    files = repo_files(root)
    markdown = [f for f in files if f.endswith(".md")]
    evidence = [f for f in files if is_evidence(f)]
    problems = []
    links_from = {}  # markdown file -> the files it links (resolved, relative to root)
    n_links = 0
    for md in markdown:
        with open(os.path.join(root, md), encoding="utf-8") as fh:
            text = fh.read()
        targets = links_from.setdefault(md, set())
        for n, target in links_of(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, mailto:
            n_links += 1
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
            targets.add(resolved)
            frag = target.split("#", 1)[1] if "#" in target else ""
            if frag and resolved.endswith(".md") and os.path.isfile(full):
                with open(full, encoding="utf-8") as th:
                    if unquote(frag).lower() not in anchors(th.read()):
                        problems.append(f"{md}:{n}: link to {target}: no heading '#{frag}' there")
    # Cited: linked from a page (markdown outside docs/evidence/), or from an evidence report
    # that is itself cited. An evidence file linked only by uncited evidence is not.
    cited = set()
    todo = [md for md in markdown if not is_evidence(md)]
    while todo:
        for target in links_from.get(todo.pop(), ()):
            if is_evidence(target) and target not in cited:
                cited.add(target)
                todo.append(target)
    for f in evidence:
        if f in cited:
            continue
        by = sorted(md for md, targets in links_from.items() if f in targets)
        how = f" (linked only from {', '.join(by)}, which no page cites)" if by else ""
        problems.append(f"{f}: under {EVIDENCE}/ but no page links it{how} "
                        "(link it where the claim it backs is made, or remove it)")
    if not markdown:
        problems.append(f"{root}: no markdown file found: nothing was checked")
    if not evidence:
        problems.append(f"{root}: no file under {EVIDENCE}/ found: the evidence check checked nothing")
    return problems, (len(markdown), n_links, len(evidence))


def scratch_check(tree):
    """check() on a scratch tree of {path: text}, written into a temporary folder."""
    with tempfile.TemporaryDirectory() as t:
        for name, body in tree.items():
            os.makedirs(os.path.dirname(os.path.join(t, name)), exist_ok=True)
            with open(os.path.join(t, name), "w") as fh:
                fh.write(body)
        return check(t)[0]


def self_test():
    failures = []

    def expect(what, tree, want):
        problems = scratch_check(tree)
        missing = [w for w in want if not any(w in p for p in problems)]
        if missing or len(problems) != len(want):
            failures.append(f"{what}: got {problems}, missing {missing}")

    expect("links and evidence", {
        "README.md": "[ok](docs/a.md) [gone](docs/missing.md)\n```\n[in code](nowhere.md)\n```\n",
        "docs/a.md": "# A page\n[log](evidence/cited.log) `[span](nowhere.md)`\n"
                     "[here](#a-page) [there](../README.md#nothing) [report](evidence/report.md)\n",
        f"{EVIDENCE}/cited.log": "x", f"{EVIDENCE}/orphan.log": "x",
        f"{EVIDENCE}/report.md": "[its log](report.log)\n", f"{EVIDENCE}/report.log": "x",
        f"{EVIDENCE}/old.md": "[its log](old.log)\n", f"{EVIDENCE}/old.log": "x",
    }, ["README.md:1: link to docs/missing.md", "docs/a.md:3: link to ../README.md#nothing",
        f"{EVIDENCE}/orphan.log: under", f"{EVIDENCE}/old.md: under",
        f"{EVIDENCE}/old.log: under {EVIDENCE}/ but no page links it (linked only from "
        f"{EVIDENCE}/old.md"])
    expect("a tree without markdown", {f"{EVIDENCE}/a.log": "x"},
           ["no markdown file found", f"{EVIDENCE}/a.log: under"])
    expect("a tree without evidence", {"README.md": "# kfleet\n"},
           [f"no file under {EVIDENCE}/ found"])
    expect("an empty tree", {}, ["no markdown file found", f"no file under {EVIDENCE}/ found"])
    if failures:
        print("self-test FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("self-test: a broken link, a missing heading, an unlinked evidence file, one linked "
          "only from uncited evidence, and a tree with no markdown or no evidence are caught")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems, (n_markdown, n_links, n_evidence) = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)")
        return 1
    print(f"{n_links} relative links in {n_markdown} markdown files resolve; each of the "
          f"{n_evidence} files under {EVIDENCE}/ is cited by a page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
