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
5. Figures are their data. A definition names the committed results file it comes from and the
   field, and the figure shown must be that field rounded to the decimals shown:
       <!-- define fig:restart-overhead data=docs/benchmarks/results-restart/summary.md#[4 (default)]/against none -->+3.35%
   It is an error when a definition names no source, when the file is missing or not committed
   (`git ls-files`; without git the check says so once and checks that it exists), when the field
   is absent or not a number, or when the figure differs from it. `tests/test_check_docs.py` breaks
   each of these in a copy of the checkout and sees the check fail.

   data=FILE#FIELD. FILE is a path from the repository's root (the same on every page). FIELD:
     .json            a JSON pointer: #/results/s3/epochs (~1 in a key is a /, ~0 a ~)
     .jsonl .csv .md  rows, then a pointer into the row: #[loader=stoke,workers=16]/images_per_s
                      picks the rows whose columns equal those values (a JSON line's keys, a CSV's
                      header, the header of a Markdown table: every table of the page, its cells
                      without ** and `), then the column: #[transform=train,start=warm]/Stoke ~1 torch.
                      A condition without = is the row's first cell: #[4 (default)]/against none.
                      [] takes every row that has the column. %2C in a condition is a comma, %5D a ].
                      A header repeated in one table is NAME#2 for its second column, NAME#3 ...
     any text file    #~REGEX: the numbers its one group matches (JMH's output, a summary's prose)
   A cell reads as its leading number: "1176 [1164-1214]" is 1176, "**3.61x**" 3.61, "1,145" 1145.
   A field that matches several rows (or a regex that matches several times) gives each value.
   Arithmetic over fields, each in braces, when the results hold the parts but not the figure:
       data={A.json#/stoke} / {A.json#/torch}          a ratio, shown as 2.47x
       data=max({runs.csv#[loader=stoke,start=cold]/images_per_s})     also min( ) median( ) mean( )
       data={run-1.jsonl#[...]/x}, {run-2.jsonl#[...]/x}               several values
   (+ - * / and parentheses; each side of an operator must be one value). Prefer a field the results
   file holds (a summary's ratio column) over arithmetic, as its generator rounded it.
   The figure shown: 1,234  2.47x  +3.35%  478ms  0.12-0.19  99-100%; a range A-B is the least and
   the greatest of several values, one number must come from exactly one. Each number passes when it
   is within half a unit of its last decimal of the value (2.4731 passes as 2.47x, fails as 2.48x).
   A figure whose source is not committed anywhere keeps no data= and fails: commit the results.
"""

import csv
import io
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_README_LINES = 200
SKIP_DIRS = {".git", "target", "node_modules", "__pycache__", "build", "dist", ".cache", ".m2"}

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
FIGURE = re.compile(r"<!--\s*(define\s+)?fig:([A-Za-z0-9_.-]+)((?:(?!-->).)*)-->([^\s<]*)")
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
                name, rest = m.group(2), m.group(3).strip()
                value = m.group(4).rstrip("*.,;:)|")
                if not value:
                    problem(page, n, "fig:%s marks no figure (write it right after the comment)" % name)
                elif m.group(1):
                    if name in defined:
                        _, p, l = defined[name]
                        problem(page, n, "fig:%s is defined twice (also %s:%d)" % (name, os.path.relpath(p, ROOT), l))
                        continue
                    defined[name] = (value, page, n)
                    if not rest.startswith("data="):
                        problem(page, n, "fig:%s names no source: write <!-- define fig:%s data=FILE#FIELD --> "
                                "with the committed results file it comes from" % (name, name)
                                if not rest else "fig:%s: %r is not data=SOURCE" % (name, rest))
                        continue
                    try:
                        check_shown(value, figure_values(rest[len("data="):].strip()))
                    except FigureError as e:
                        problem(page, n, "fig:%s: %s" % (name, e))
                elif rest:
                    problem(page, n, "fig:%s: a repetition names no source (%s belongs on its definition)" % (name, rest))
                else:
                    uses.append((name, value, page, n))
    for name, value, page, n in uses:
        if name not in defined:
            problem(page, n, "fig:%s is defined nowhere (<!-- define fig:%s --> where it is measured)" % (name, name))
        elif defined[name][0] != value:
            v, p, l = defined[name]
            problem(page, n, "fig:%s is %s here but %s where it is defined (%s:%d)"
                    % (name, value, v, os.path.relpath(p, ROOT), l))


# A figure's source, data=...: the docstring's 5.


class FigureError(Exception):
    pass


SHOWN = re.compile(r"^([+-]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:-(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?)?(x|%|ms|s)?$")
NUMBER_CELL = re.compile(r"^[*_`\s]*([+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+)")
TOKEN = re.compile(r"\s*(?:(\{[^{}]*\})|(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|([A-Za-z_]+)|(\S))")


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


FUNCTIONS = {"min": min, "max": max, "median": median, "mean": lambda v: sum(v) / len(v)}


def check_shown(shown, values):
    """The figure as shown (one number, or a range A-B) against the values from its source."""
    m = SHOWN.match(shown)
    if not m:
        raise FigureError("%s is not a number this check reads (1,234 2.47x +3.35%% 0.12-0.19 478ms)" % shown)
    sign, whole, frac, whole2, frac2, _ = m.groups()
    low = (sign, whole, frac or "")
    if whole2 is None:
        if len(values) != 1:
            raise FigureError("its source gives %d values (%s) but it shows one number; narrow the rows, "
                              "or take min(), max() or median() of them" % (len(values), render(values)))
        wanted = [(low, values[0])]
    else:
        wanted = [(low, min(values)), (("", whole2, frac2 or ""), max(values))]
    for (s, w, f), v in wanted:
        number = float(s + w.replace(",", "") + f)
        decimals = len(f) - 1 if f else 0
        if abs(v - number) > 0.5 * 10 ** -decimals * (1 + 1e-9) + 1e-12:
            raise FigureError("shows %s but its source gives %s, which is %s at %d decimal(s)"
                              % (shown, render(values), "%.*f" % (decimals, v), decimals))


def render(values):
    return ", ".join("%.6g" % v for v in values)


def figure_values(spec):
    """The list of numbers that data=SPEC gives."""
    if "{" not in spec:
        return resolve(spec)
    tokens = []
    pos = 0
    while pos < len(spec):
        m = TOKEN.match(spec, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        if m.group(1):
            tokens.append(("ref", m.group(1)[1:-1].strip()))
        elif m.group(2):
            tokens.append(("num", float(m.group(2))))
        elif m.group(3):
            tokens.append(("name", m.group(3)))
        elif m.group(4):
            tokens.append(("op", m.group(4)))
    tokens.append(("end", None))
    parser = _Expression(tokens)
    values = parser.items()
    if tokens[parser.at][0] != "end":
        raise FigureError("data=%s: unexpected %r" % (spec, tokens[parser.at][1]))
    return values


class _Expression:
    """items := item (',' item)*;  item := sum;  sum := product (('+'|'-') product)*;
    product := unary (('*'|'/') unary)*;  unary := '-' unary | atom;
    atom := NUMBER | {REF} | NAME '(' items ')' | '(' sum ')'.
    A {REF} or function gives a list of numbers; arithmetic takes one number from each side."""

    def __init__(self, tokens):
        self.tokens = tokens
        self.at = 0

    def peek(self):
        return self.tokens[self.at]

    def take(self, kind, text=None):
        t = self.tokens[self.at]
        if t[0] != kind or (text is not None and t[1] != text):
            raise FigureError("in data=: expected %s, found %r" % (text or kind, t[1]))
        self.at += 1
        return t

    def items(self):
        values = list(self.sum())
        while self.peek() == ("op", ","):
            self.at += 1
            values += self.sum()
        return values

    def one(self, values):
        if len(values) != 1:
            raise FigureError("a term of its arithmetic gives %d values (%s), not one: narrow the rows, "
                              "or take min(), max() or median() of them" % (len(values), render(values)))
        return values[0]

    def sum(self):
        left = self.product()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.take("op")[1]
            right = self.one(self.product())
            left = [self.one(left) + right if op == "+" else self.one(left) - right]
        return left

    def product(self):
        left = self.unary()
        while self.peek() in (("op", "*"), ("op", "/")):
            op = self.take("op")[1]
            right = self.one(self.unary())
            if op == "/" and right == 0:
                raise FigureError("in data=: division by zero")
            left = [self.one(left) * right if op == "*" else self.one(left) / right]
        return left

    def unary(self):
        if self.peek() == ("op", "-"):
            self.at += 1
            return [-self.one(self.unary())]
        return self.atom()

    def atom(self):
        kind, text = self.peek()
        if kind == "num":
            self.at += 1
            return [text]
        if kind == "ref":
            self.at += 1
            return resolve(text)
        if kind == "name":
            if text not in FUNCTIONS:
                raise FigureError("in data=: no function %s (there are %s)" % (text, ", ".join(sorted(FUNCTIONS))))
            self.at += 1
            self.take("op", "(")
            values = self.items()
            self.take("op", ")")
            return [FUNCTIONS[text](values)]
        if (kind, text) == ("op", "("):
            self.at += 1
            values = self.sum()
            self.take("op", ")")
            return values
        raise FigureError("in data=: unexpected %r" % (text,))


_tracked = None


def tracked_files():
    """The files git tracks in the checkout (a set of paths from ROOT), or None without git."""
    global _tracked
    if _tracked is None:
        try:
            out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
            _tracked = set(out.decode("utf-8").split("\0")) - {""}
        except (OSError, subprocess.CalledProcessError) as e:
            print("docs/check_docs.py: git ls-files failed (%s): figures' sources are checked to exist, "
                  "not to be committed" % (e,))
            _tracked = False
    return _tracked or None


_loaded = {}


def resolve(ref):
    """The numbers a reference FILE#SELECTOR names (a list: one, or one per row or match)."""
    path, hash_, selector = ref.partition("#")
    path = path.strip()
    if not hash_ or not path or not selector:
        raise FigureError("source %r is not FILE#FIELD (a path from the repository's root, then #)" % ref)
    full = os.path.normpath(os.path.join(ROOT, path))
    if not os.path.isfile(full):
        raise FigureError("source file %s is missing" % path)
    tracked = tracked_files()
    if tracked is not None and os.path.relpath(full, ROOT).replace(os.sep, "/") not in tracked:
        raise FigureError("source file %s is not committed (git ls-files does not list it)" % path)
    if selector.startswith("~"):
        return matched_numbers(full, path, selector[1:], ref)
    rows = load(full, path)
    conditions, pointer = [], selector
    if selector.startswith("["):
        inside, close, pointer = selector[1:].partition("]")
        if not close:
            raise FigureError("source %s: [ without ]" % ref)
        for c in inside.split(",") if inside.strip() else []:
            key, eq, want = c.partition("=")
            # No '=': the row's first cell (a Markdown table's first column, a record's first key).
            conditions.append((unescape(key.strip()) if eq else None, unescape((want if eq else key).strip())))
        if not isinstance(rows, list):
            raise FigureError("source %s: [...] chooses rows, and %s holds no list of rows" % (ref, path))
        rows = [r for r in rows if isinstance(r, dict) and all(
            cell_text(r.get(k) if k is not None else next(iter(r.values()), None)) == v for k, v in conditions)]
        if not rows:
            raise FigureError("source %s: no row has %s" % (ref, inside))
    elif not isinstance(rows, dict):
        raise FigureError("source %s: choose rows with [COLUMN=VALUE,...] before the field" % ref)
    else:
        rows = [rows]
    if not pointer.startswith("/"):
        raise FigureError("source %s: the field is a pointer, /key/key (a JSON pointer)" % ref)
    values = []
    for row in rows:
        node = field(row, pointer)
        if node is not _ABSENT:  # a row without the field (another table's, a record of another kind)
            values.append(number(node, ref))
    if not values:
        raise FigureError("source %s: no field %s%s" % (ref, pointer, " in the rows chosen" if conditions else ""))
    return values


_ABSENT = object()


def field(node, pointer):
    """The value at a JSON pointer (RFC 6901: ~1 is a /, ~0 a ~), or _ABSENT."""
    for key in pointer[1:].split("/"):
        key = key.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return _ABSENT
    return node


def matched_numbers(full, path, pattern, ref):
    """The numbers a regular expression's first group matches in a text file (JMH's output, a summary's prose)."""
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise FigureError("source %s: not a regular expression (%s)" % (ref, e))
    if regex.groups != 1:
        raise FigureError("source %s: the expression needs one group ( ) around the number" % ref)
    with open(full, encoding="utf-8") as f:
        found = regex.findall(f.read())
    if not found:
        raise FigureError("source %s: nothing in %s matches %s" % (ref, path, pattern))
    return [number(m, ref) for m in found]


def unescape(text):
    """%2C in a condition is a comma, %5D a ], %25 a %."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def cell_text(value):
    if isinstance(value, str):
        return value.strip().strip("*`").strip()
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return "" if value is None else str(value)


def number(node, ref):
    if isinstance(node, bool) or node is None:
        raise FigureError("source %s: the field is %r, not a number" % (ref, node))
    if isinstance(node, (int, float)):
        return float(node)
    if isinstance(node, str):
        m = NUMBER_CELL.match(node)
        if m:
            return float(m.group(1).replace(",", ""))
    raise FigureError("source %s: the field is %r, not a number" % (ref, node))


def load(full, path):
    """A results file as rows: JSON as it is; JSON lines, CSV and Markdown tables as a list of dicts."""
    if full not in _loaded:
        with open(full, encoding="utf-8") as f:
            text = f.read()
        try:
            if path.endswith(".json"):
                _loaded[full] = json.loads(text)
            elif path.endswith(".jsonl"):
                _loaded[full] = [json.loads(l) for l in text.split("\n") if l.strip()]
            elif path.endswith(".csv"):
                _loaded[full] = list(csv.DictReader(io.StringIO(text)))
            elif path.endswith(".md"):
                _loaded[full] = markdown_rows(text)
            else:
                raise FigureError("source file %s: this check reads .json, .jsonl, .csv and .md tables" % path)
        except ValueError as e:
            raise FigureError("source file %s does not parse: %s" % (path, e))
    return _loaded[full]


def markdown_rows(text):
    """Every body row of every table in a Markdown page, as {header: cell}."""
    rows, header = [], None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        cells = table_cells(line)
        if cells is None:
            header = None
        elif header is None:
            nxt = table_cells(lines[i + 1]) if i + 1 < len(lines) else None
            if nxt and all(re.match(r"^:?-+:?$", c) for c in nxt):
                header = []
                for c in cells:  # a second "ratio" column is "ratio#2"
                    header.append(c if c not in header else "%s#%d" % (c, 1 + sum(
                        1 for h in header if h == c or h.startswith(c + "#"))))
        elif not all(re.match(r"^:?-+:?$", c) for c in cells):
            rows.append(dict(zip(header, cells)))
    return rows


def table_cells(line):
    line = line.strip()
    if not line.startswith("|"):
        return None
    return [c.strip() for c in line.strip("|").split("|")]


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
