"""Checks the documentation. `./stoke test` runs it first, as `python3 -S docs/check_docs.py`
(standard library only). It prints FILE:LINE: reason for each problem and exits 1 when there is one.

1. README.md is a front page: at most 200 lines.
2. README.md links every page: each .md under docs/ and clients/python/README.md. Result files
   (summary.md, *-summary.md) are linked from the benchmark pages instead and are not counted.
3. Every relative link in every .md of the checkout points at a file that exists, and a link's
   #anchor names a heading of the page it points at (GitHub's anchors).
4. Figures agree. A headline figure is defined once, on the page that states its measurement, by a
   comment right before it:      <!-- define fig:restart-overhead -->+3.35%
   Any other page that repeats it marks the repetition the same way, without "define":
                                  <!-- fig:restart-overhead -->+3.35%
   The figure is the text after the comment up to the next space (a trailing * . , ; : ) or | is
   not part of it). A name defined twice or never, or a repetition that differs, is an error. To
   change a figure, change its definition and every repetition: `grep -rn fig:NAME --include=*.md`.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_README_LINES = 200
SKIP_DIRS = {".git", "target", "node_modules", "__pycache__", "build", "dist", ".cache", ".m2"}

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
FIGURE = re.compile(r"<!--\s*(define\s+)?fig:([A-Za-z0-9_.-]+)\s*-->([^\s<]*)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")

problems = []


def problem(path, line, reason):
    problems.append("%s:%d: %s" % (os.path.relpath(path, ROOT), line, reason))


def markdown_files():
    for top, dirs, files in os.walk(ROOT):
        # A virtual environment (pyvenv.cfg) or a build output holds no pages of ours.
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                         and not os.path.exists(os.path.join(top, d, "pyvenv.cfg")))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(top, f)


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fenced = False
    for n, line in enumerate(lines, 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text stays
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else "%s-%d" % (base, n))
            for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                found.add(a)
        _anchors[path] = found
    return _anchors[path]


def links(path):
    """(line number, target) of every link outside code."""
    for n, line in prose_lines(path):
        line = CODE_SPAN.sub("", line)
        for m in LINK.finditer(line):
            yield n, m.group(1)
        m = REF_LINK.match(line)
        if m:
            yield n, m.group(1)


def check_links(pages):
    linked_from_readme = set()
    readme = os.path.join(ROOT, "README.md")
    for page in pages:
        for n, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file_part)) if file_part else page
            if not os.path.exists(dest):
                problem(page, n, "link to a missing file: %s" % target)
                continue
            if page == readme:
                linked_from_readme.add(dest)
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problem(page, n, "link to a missing heading: %s (no #%s in %s)"
                        % (target, anchor, os.path.relpath(dest, ROOT)))
    return linked_from_readme


def check_readme(pages, linked):
    readme = os.path.join(ROOT, "README.md")
    with open(readme, encoding="utf-8") as f:
        count = len(f.read().rstrip("\n").split("\n"))
    if count > MAX_README_LINES:
        problem(readme, MAX_README_LINES + 1,
                "README.md has %d lines, more than %d: move the detail to a page under docs/ and link it"
                % (count, MAX_README_LINES))
    wanted = [p for p in pages if p.startswith(os.path.join(ROOT, "docs") + os.sep)
              and not os.path.basename(p).endswith("summary.md")]
    wanted.append(os.path.join(ROOT, "clients", "python", "README.md"))
    for page in wanted:
        if page not in linked:
            problem(readme, 1, "README.md does not link %s" % os.path.relpath(page, ROOT))


def check_figures(pages):
    defined = {}  # name -> (value, path, line)
    uses = []
    for page in pages:
        for n, line in prose_lines(page):
            for m in FIGURE.finditer(line):
                value = m.group(3).rstrip("*.,;:)|")
                if not value:
                    problem(page, n, "fig:%s marks no figure (write it right after the comment)" % m.group(2))
                elif m.group(1):
                    if m.group(2) in defined:
                        _, p, l = defined[m.group(2)]
                        problem(page, n, "fig:%s is defined twice (also %s:%d)" % (m.group(2), os.path.relpath(p, ROOT), l))
                    else:
                        defined[m.group(2)] = (value, page, n)
                else:
                    uses.append((m.group(2), value, page, n))
    for name, value, page, n in uses:
        if name not in defined:
            problem(page, n, "fig:%s is defined nowhere (<!-- define fig:%s --> where it is measured)" % (name, name))
        elif defined[name][0] != value:
            v, p, l = defined[name]
            problem(page, n, "fig:%s is %s here but %s where it is defined (%s:%d)"
                    % (name, value, v, os.path.relpath(p, ROOT), l))


def main():
    pages = list(markdown_files())
    linked = check_links(pages)
    check_readme(pages, linked)
    check_figures(pages)
    for p in problems:
        print(p)
    if problems:
        print("docs/check_docs.py: %d problem(s)" % len(problems))
        return 1
    print("docs/check_docs.py: %d pages, links, README and figures OK" % len(pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
