"""docs/check_docs.py's figures against their data: `./stoke test` runs this right after the check,
as `python3 -S tests/test_check_docs.py` (standard library only).

Each test copies the checkout (the files git lists, tracked ones added to a fresh git index there)
to a temporary folder, breaks one thing on a page or in a results file there, runs the copy's
check_docs.py as its own process and reads what it says. The values the check must accept or
refuse come from here (a results file written by the test, or the committed results read by
this file's own code), not from the check.
"""

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = "docs/benchmarks/README.md"
DEFINE = re.compile(r"<!-- define fig:([A-Za-z0-9_.-]+) data=((?:(?!-->).)*)-->([^\s<]*)")


def definitions(text):
    """The definitions with a source on a page, outside fenced code (an example is no figure)."""
    fenced, offset = False, 0
    for line in text.split("\n"):
        if re.match(r"^\s{0,3}(```|~~~)", line):
            fenced = not fenced
        elif not fenced:
            for m in DEFINE.finditer(text, offset, offset + len(line)):
                yield m
        offset += len(line) + 1


def git(cwd, *args):
    return subprocess.run(["git"] + list(args), cwd=cwd, check=True, capture_output=True).stdout.decode()


class CheckDocsFiguresTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="check-docs-")
        cls.copy = os.path.join(cls.tmp, "checkout")
        tracked = [p for p in git(ROOT, "ls-files", "-z").split("\0") if p]
        untracked = [p for p in git(ROOT, "ls-files", "-z", "--others", "--exclude-standard").split("\0") if p]
        present = []
        for rel in tracked + untracked:
            src = os.path.join(ROOT, rel)
            if os.path.isfile(src) and not os.path.islink(src):
                dst = os.path.join(cls.copy, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copyfile(src, dst)
                if rel in tracked:
                    present.append(rel)
        git(cls.copy, "init", "-q")
        # What the checkout has committed, the copy has in its index: `git ls-files` lists the same.
        for i in range(0, len(present), 200):
            git(cls.copy, "add", "--", *present[i:i + 200])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        self.saved = {}

    def tearDown(self):
        for rel, text in self.saved.items():
            if text is None:
                os.remove(os.path.join(self.copy, rel))
            else:
                self.write(rel, text)

    def read(self, rel):
        with open(os.path.join(self.copy, rel), encoding="utf-8") as f:
            return f.read()

    def write(self, rel, text):
        path = os.path.join(self.copy, rel)
        if rel not in self.saved:
            self.saved[rel] = self.read(rel) if os.path.exists(path) else None
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def check(self, env=None):
        """(exit status, output) of the copy's docs/check_docs.py."""
        r = subprocess.run([sys.executable, "-S", os.path.join(self.copy, "docs", "check_docs.py")],
                           cwd=self.copy, capture_output=True, text=True, timeout=120, env=env)
        return r.returncode, r.stdout + r.stderr

    def assert_fails(self, where, *reasons):
        rc, out = self.check()
        self.assertEqual(1, rc, out)
        lines = [l for l in out.splitlines() if l.startswith(where + ": ")]
        self.assertTrue(lines, "nothing reported at %s:\n%s" % (where, out))
        for reason in reasons:
            self.assertTrue(any(reason in l for l in lines), "%r not said at %s:\n%s" % (reason, where, out))

    def assert_passes(self):
        rc, out = self.check()
        self.assertEqual(0, rc, out)
        self.assertIn("figures OK", out)

    def commit(self, rel, body):
        """Writes a results file in the copy and adds it to the copy's index (removed after the test)."""
        self.write(rel, body)
        git(self.copy, "add", "--", rel)
        self.addCleanup(git, self.copy, "rm", "-q", "--cached", "--", rel)

    def try_figure(self, text, ok):
        """Appends a paragraph to the benchmarks page, checks, and puts the page back."""
        page = self.read(PAGE)
        self.write(PAGE, page.rstrip("\n") + "\n\n" + text + "\n")
        try:
            if ok:
                self.assert_passes()
            else:
                self.assert_fails("%s:%d" % (PAGE, page.rstrip("\n").count("\n") + 3), "fig:figtest:")
        finally:
            self.write(PAGE, page)

    # The checkout as it is.

    def test_untouched_docs_pass(self):
        self.assert_passes()

    def test_every_definition_names_a_source(self):
        names = re.findall(r"<!--\s*define\s+fig:([A-Za-z0-9_.-]+)\s*-->", self.all_pages())
        self.assertEqual([], names, "definitions without data=")

    def all_pages(self):
        text = []
        for top, _, files in os.walk(os.path.join(self.copy, "docs")):
            text += [self.read(os.path.relpath(os.path.join(top, f), self.copy)) for f in files if f.endswith(".md")]
        return "\n".join(text)

    def test_each_figure_off_by_its_last_digit_fails(self):
        # Every definition in the docs, one at a time: its last digit moved by 2 (more than the half
        # unit rounding allows) fails at its own line, and only there.
        found = 0
        for top, _, files in os.walk(os.path.join(self.copy, "docs")):
            for f in sorted(files):
                rel = os.path.relpath(os.path.join(top, f), self.copy)
                if not f.endswith(".md") or "define fig:" not in self.read(rel):
                    continue
                text = self.read(rel)
                for m in definitions(text):
                    found += 1
                    value = m.group(3).rstrip("*.,;:)|")
                    i = max(k for k, c in enumerate(value) if c.isdigit())
                    d = int(value[i])
                    broken = value[:i] + str(d + 2 if d < 8 else d - 2) + value[i + 1:]
                    self.write(rel, text[:m.start(3)] + broken + text[m.start(3) + len(value):])
                    line = text.count("\n", 0, m.start()) + 1
                    self.assert_fails("%s:%d" % (rel, line), "fig:%s: shows %s but its source gives" % (m.group(1), broken))
                    self.write(rel, text)
        self.assertGreater(found, 30)

    def test_a_removed_source_fails(self):
        text = self.read(PAGE)
        m = next(definitions(text))
        self.write(PAGE, text[:m.start(2) - len(" data=")] + " " + text[m.end(2):])
        self.assert_fails("%s:%d" % (PAGE, text.count("\n", 0, m.start()) + 1),
                          "fig:%s names no source" % m.group(1))

    def test_a_wrong_field_and_a_missing_file_fail(self):
        text = self.read(PAGE)
        m = next(definitions(text))
        where = "%s:%d" % (PAGE, text.count("\n", 0, m.start()) + 1)
        spec = m.group(2)
        wrong = spec.replace("]/", "]/nowhere_").replace("#/", "#/nowhere_")  # a row's column, a JSON key
        self.assertNotEqual(spec, wrong)
        self.write(PAGE, text[:m.start(2)] + wrong + text[m.end(2):])
        self.assert_fails(where, "no field")
        path = re.search(r"(docs/[^#{}]+)#", spec).group(1)
        self.write(PAGE, text[:m.start(2)] + spec.replace(path, path + ".gone") + text[m.end(2):])
        self.assert_fails(where, "source file %s.gone is missing" % path)

    def test_a_repetition_that_differs_fails(self):
        readme = self.read("README.md")
        m = re.search(r"<!-- fig:([A-Za-z0-9_.-]+) -->(\d)", readme)
        self.write("README.md", readme[:m.start(2)] + str((int(m.group(2)) + 1) % 10) + readme[m.end(2):])
        self.assert_fails("README.md:%d" % (readme.count("\n", 0, m.start()) + 1),
                          "fig:%s is " % m.group(1), "where it is defined")

    # A committed figure against the test's own reading of its results.

    def test_the_cold_ratio_is_the_csv_read_here(self):
        with open(os.path.join(self.copy, "docs/benchmarks/results/runs.csv"), encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if r["dataset"] == "jpeg" and r["start"] == "cold" and r["model_ms"] == "0"]
        # Stoke's best against torch's fastest path, its tensor one.
        best = {l: max(float(r["images_per_s"]) for r in rows if r["loader"] == l) for l in ("stoke", "pytorch-tensor")}
        ratio = best["stoke"] / best["pytorch-tensor"]
        text = self.read(PAGE)
        m = re.search(r"(<!-- define fig:cold-best-ratio data=(?:(?!-->).)*-->)([0-9.]+)x", text)
        self.assertEqual("%.2f" % ratio, m.group(2))
        where = "%s:%d" % (PAGE, text.count("\n", 0, m.start()) + 1)
        readme = self.read("README.md")  # repeats it
        for shown, ok in (("%.1f" % ratio, True), ("%.3f" % ratio, True), ("%.2f" % (ratio + 0.01), False),
                          ("%.2f" % (ratio - 0.01), False), ("%.0f" % ratio, True)):
            self.write(PAGE, text[:m.end(1)] + shown + text[m.end(2):])
            self.write("README.md", readme.replace("<!-- fig:cold-best-ratio -->%sx" % m.group(2),
                                                   "<!-- fig:cold-best-ratio -->%sx" % shown))
            if ok:
                self.assert_passes()
            else:
                self.assert_fails(where, "fig:cold-best-ratio: shows %sx" % shown)

    # The syntax, on a results file whose values this test chose.

    RESULTS = "docs/benchmarks/results-figtest/r.json"
    VALUES = {"rate": {"stoke": 4418.27, "torch": 1787.4}, "share": 0.0335, "runs": [0.981, 1.004]}

    def results(self):
        return self.RESULTS, json.dumps(self.VALUES)

    def test_json_values_rounded_pass_and_off_fail(self):
        r = self.RESULTS
        cases = [
            ("data=%s#/rate/stoke -->4,418 images/s" % r, True),
            ("data=%s#/rate/stoke -->4,418.3" % r, True),
            ("data=%s#/rate/stoke -->4,419" % r, False),
            ("data=%s#/rate/stoke -->4,418.2" % r, False),
            ("data={%s#/rate/stoke} / {%s#/rate/torch} -->2.47x" % (r, r), True),  # 2.4719
            ("data={%s#/rate/stoke} / {%s#/rate/torch} -->2.48x" % (r, r), False),
            ("data={%s#/share} * 100 -->+3.35%%" % r, True),
            ("data={%s#/share} * 100 -->+3.4%%" % r, True),
            ("data={%s#/share} * 100 -->+3.36%%" % r, False),
            ("data={%s#/runs/0}, {%s#/runs/1} -->0.98-1.00x" % (r, r), True),
            ("data=min({%s#/runs/0}, {%s#/runs/1}) -->0.98x" % (r, r), True),
            ("data={%s#/runs/0}, {%s#/runs/1} -->0.98-1.01x" % (r, r), False),
            ("data={%s#/runs/0}, {%s#/runs/1} -->0.98x" % (r, r), False),  # two values, one number
        ]
        self.commit(*self.results())
        for tail, ok in cases:
            with self.subTest(tail):
                self.try_figure("A figure: <!-- define fig:figtest %s." % tail, ok)

    def test_rows_of_a_csv_jsonl_and_markdown_table(self):
        base = "docs/benchmarks/results-figtest/"
        files = {
            base + "runs.csv": "loader,workers,images_per_s\nstoke,2,978.4\ntorch,2,397.2\nstoke,4,801.0\n",
            base + "runs.jsonl": '{"case": "a, b", "rate": 12.5}\n{"case": "c", "rate": 30}\n',
            base + "summary.md": "# S\n\n| transform | start | torch | Stoke / torch | ratio | ratio |\n"
                                 "|---|---|---:|---:|---:|---:|\n| train | warm | 1176 [1164-1214] | **5.07x** | 1.5x | 2.5x |\n",
        }
        for rel, body in files.items():
            self.commit(rel, body)
        cases = [
            ("data=%sruns.csv#[loader=stoke,workers=2]/images_per_s -->978" % base, True),
            ("data=%sruns.csv#[loader=stoke,workers=2]/images_per_s -->979" % base, False),
            ("data=%sruns.csv#[loader=stoke]/images_per_s -->801-978" % base, True),
            ("data=max({%sruns.csv#[loader=stoke]/images_per_s}) -->978" % base, True),
            ("data=%sruns.csv#[loader=stoke]/images_per_s -->978" % base, False),  # two rows
            ("data=%sruns.jsonl#[case=a%%2C b]/rate -->12.5" % base, True),
            ("data=%sruns.jsonl#[c]/rate -->30" % base, True),
            ("data=%ssummary.md#[transform=train,start=warm]/torch -->1,176" % base, True),
            ("data=%ssummary.md#[train,start=warm]/Stoke ~1 torch -->5.07x" % base, True),
            ("data=%ssummary.md#[train]/ratio#2 -->2.5x" % base, True),
            ("data=%ssummary.md#[train]/ratio -->2.5x" % base, False),
            ("data=%ssummary.md#~(\\d+\\.\\d+)x \\| 2 -->1.5x" % base, True),
            ("data=%ssummary.md#[transform=eval]/torch -->1,176" % base, False),
        ]
        for tail, ok in cases:
            with self.subTest(tail):
                self.try_figure("A figure: <!-- define fig:figtest %s." % tail, ok)

    def test_without_git_it_says_so_once_and_checks_that_sources_exist(self):
        self.write(*self.results())  # not in the index: without git, only its existence is checked
        page = self.read(PAGE)
        self.write(PAGE, page + "\nA figure: <!-- define fig:figtest data=%s#/rate/stoke -->4,418.\n" % self.RESULTS)
        no_git = dict(os.environ, PATH=self.tmp)  # a folder without a git in it
        rc, out = self.check(no_git)
        self.assertEqual(0, rc, out)
        self.assertEqual(1, out.count("git ls-files failed"), out)
        os.remove(os.path.join(self.copy, self.RESULTS))
        del self.saved[self.RESULTS]
        rc, out = self.check(no_git)
        self.assertEqual(1, rc, out)
        self.assertIn("%s:%d: fig:figtest: source file %s is missing" % (PAGE, page.count("\n") + 2, self.RESULTS), out)

    def test_an_uncommitted_results_file_fails(self):
        self.write(*self.results())  # written, not added to the index
        page = self.read(PAGE)
        self.write(PAGE, page + "\nA figure: <!-- define fig:figtest data=%s#/rate/stoke -->4,418.\n" % self.RESULTS)
        self.assert_fails("%s:%d" % (PAGE, page.count("\n") + 2), "source file %s is not committed" % self.RESULTS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
