#!/usr/bin/env python3
"""The project's contract is docs/ (docs/README.md): code, tests, tools and the docs
themselves cite it as docs/FILE.md#anchor (or, inside docs/, as Markdown links
FILE.md#anchor), where the anchor is the heading as GitHub writes it. This checks
that every cited file and heading exists, and that nothing cites a contract outside
the repository. Usage: python3 tools/check_doc_citations.py   (exit 1 on a bad citation)
"""
import pathlib
import re
import sys
import unicodedata

root = pathlib.Path(__file__).resolve().parent.parent
docs = root / "docs"


def slug(heading):
    """GitHub's anchor for a heading: lower case, inline markup and punctuation
    dropped (letters, digits, _, - and spaces stay), each space a hyphen."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    # github-slugger keeps letters, marks, decimal digits, letter numbers and connector
    # punctuation (so "n²" becomes "n"), spaces and hyphens.
    kept = "".join(c for c in text
                   if c in " -" or unicodedata.category(c)[0] in "LM" or unicodedata.category(c) in ("Nd", "Nl", "Pc"))
    return kept.replace(" ", "-")


def anchors(path):
    """Every heading's anchor in one Markdown file (repeats get -1, -2, … as on GitHub)."""
    seen, out = {}, set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        m = re.match(r"#{1,6} (.+)", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


# What is scanned: the whole tracked tree but the generated and the binary.
scanned_dirs = ["src", "include", "tests", "tools", "fuzz", "bench", "cmake", "completion", "docs", "examples", ".ci"]
scanned_files = ["README.md", "CMakeLists.txt"]
suffixes = {".cpp", ".hpp", ".cu", ".cuh", ".h", ".py", ".sh", ".md", ".cmake", ".txt", ".bash", ".json", ""}

# docs/FILE.md or docs/FILE.md#anchor anywhere; inside docs/, also (FILE.md#anchor) links.
cite = re.compile(r"docs/([A-Za-z0-9_]+\.md)(?:#([^\s)\]'\"`,;]+))?")
local_link = re.compile(r"\]\((?:\./)?([A-Za-z0-9_]+\.md)?(?:#([^\s)]+))?(?: \"[^\"]*\")?\)")
# A contract outside the repository. The pattern is built so that this file does not match itself.
outside = re.compile("SP" + r"EC ?(§|\.md)|the SP" + r"EC|§ ?\d")

cache = {}
# This file and its test write bad citations on purpose; they cite nothing.
exempt = {pathlib.Path("tools/check_doc_citations.py"), pathlib.Path("tests/cli/doc_citations.sh")}


def known(file, anchor):
    path = docs / file
    if not path.is_file():
        return f"docs/{file} does not exist"
    if anchor is None:
        return None
    if file not in cache:
        cache[file] = anchors(path)
    return None if anchor in cache[file] else f"docs/{file} has no heading with the anchor #{anchor}"


def files():
    for d in scanned_dirs:
        for p in sorted((root / d).rglob("*")):
            if p.is_file() and p.suffix in suffixes and "fuzz-regressions" not in p.parts and p.relative_to(root) not in exempt:
                yield p
    for f in scanned_files:
        if (root / f).is_file():
            yield root / f


problems = []
count = 0
for path in files():
    rel = path.relative_to(root)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        continue
    in_docs = rel.parts[0] == "docs"
    for number, line in enumerate(text.splitlines(), 1):
        if outside.search(line):
            problems.append(f"{rel}:{number}: cites a document outside the repository (cite docs/ instead)")
        for m in cite.finditer(line):
            count += 1
            why = known(m.group(1), m.group(2))
            if why:
                problems.append(f"{rel}:{number}: {why}")
        if in_docs and path.suffix == ".md":
            for m in local_link.finditer(line):
                if m.group(1) is None and m.group(2) is None:
                    continue
                count += 1
                why = known(m.group(1) or rel.name, m.group(2))
                if why:
                    problems.append(f"{rel}:{number}: {why}")

for p in problems:
    print(p)
print(f"{count} citations of docs/, {len(problems)} bad")
# No citation found at all means the patterns above stopped matching, not a clean tree.
sys.exit(1 if problems or count == 0 else 0)
