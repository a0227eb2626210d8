#!/usr/bin/env python3
"""The public hack catalogue of docs/measurement.md ("Publicly reported hacks"): every row names
at least one corpus entry (a link into jobs/exploits/), every entry it names exists, and every
entry is a row of its corpus's expected.tsv, so that the GPU scripts run it and judge it.
The sources are all there: KernelArena's patterns (ten at least), reference-kernels #162's five
families, the hacker-fixer corpus.
  check-hack-table.py ROOT        check the repository at ROOT
  check-hack-table.py --self-test the checker refuses a row without an entry, a missing entry,
                                  and an unlisted one"""
import os
import re
import sys
import tempfile

SECTION = "## Publicly reported hacks"
LINK = re.compile(r"\]\((\.\./jobs/exploits/[^)]+)\)")


def rows_of(text):
    start = text.find(SECTION)
    if start < 0:
        return None
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("|") and not line.startswith("|---") and not line.startswith("| #"):
            rows.append(line)
    return rows


def listed(root):
    names = set()
    for tsv, prefix in (("jobs/exploits/expected.tsv", "jobs/exploits/"),
                        ("jobs/exploits/python/expected.tsv", "jobs/exploits/python/")):
        path = os.path.join(root, tsv)
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    names.add(os.path.normpath(prefix + line.split("\t")[0]))
    return names


def check(root):
    problems = []
    with open(os.path.join(root, "docs/measurement.md"), encoding="utf-8") as f:
        rows = rows_of(f.read())
    if rows is None:
        return ["docs/measurement.md has no section '%s'" % SECTION]
    known = listed(root)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        links = LINK.findall(row)
        if not links:
            problems.append("row %s names no entry of jobs/exploits/: %s" % (cells[0], row[:100]))
        for link in links:
            rel = os.path.normpath(os.path.join("docs", link))
            if not os.path.exists(os.path.join(root, rel)):
                problems.append("row %s: %s does not exist" % (cells[0], rel))
            elif rel not in known:
                problems.append("row %s: %s is not a row of its expected.tsv (no GPU script runs it)" % (cells[0], rel))
    sources = [row.split("|")[2] for row in rows if row.count("|") > 3]
    for name, least in (("KernelArena", 10), ("reference-kernels #162", 5), ("hacker-fixer", 1)):
        n = sum(name in s for s in sources)
        if n < least:
            problems.append("%d row(s) from %s; the catalogue has %d or more" % (n, name, least))
    return problems


def self_test():
    ok_row = "| 1 | KernelArena (timing) | a | b | [01](../jobs/exploits/01.yaml) |"
    cases = {
        "a row without an entry": "| 1 | KernelArena (timing) | a | b | none |",
        "a missing entry": "| 1 | KernelArena (timing) | a | b | [09](../jobs/exploits/09.yaml) |",
        "an unlisted entry": "| 1 | KernelArena (timing) | a | b | [02](../jobs/exploits/02.yaml) |",
    }
    failed = []
    for what, bad in list(cases.items()) + [("nothing wrong", None)]:
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "docs"))
            os.makedirs(os.path.join(root, "jobs/exploits/python"))
            for name in ("01.yaml", "02.yaml"):
                open(os.path.join(root, "jobs/exploits", name), "w").close()
            with open(os.path.join(root, "jobs/exploits/expected.tsv"), "w") as f:
                f.write("# file\tstate\tgate\treason\n01.yaml\trejected\tcorrectness\tx\n")
            rows = [ok_row] * 10 + ["| 2 | reference-kernels #162 | a | b | [01](../jobs/exploits/01.yaml) |"] * 5
            rows.append("| 3 | hacker-fixer corpus | a | b | [01](../jobs/exploits/01.yaml) |")
            if bad:
                rows.append(bad)
            with open(os.path.join(root, "docs/measurement.md"), "w") as f:
                f.write("# M\n\n%s\n\n| # | source | hack | rule | entry |\n|---|---|---|---|---|\n%s\n\n## Next\n"
                        % (SECTION, "\n".join(rows)))
            found = check(root)
            if bool(found) != bool(bad):
                failed.append("%s: %s" % (what, found or "accepted"))
    for f in failed:
        print("check-hack-table self-test: " + f)
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    problems = check(sys.argv[1])
    for p in problems:
        print("check-hack-table: " + p)
    if not problems:
        print("check-hack-table: every row names an existing, listed entry")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
