#!/usr/bin/env bash
# Quick checks of ./stoke itself (no build, no JVM; `./stoke test` runs this before Maven):
#   - a wrong usage exits 2 (docs/cli.md#exit-codes);
#   - STOKE_TEST_STACKS names the three Python stacks, and the last FAILED line names each;
#   - torch 2.14.1's stack is skipped where there is no mirror, and fails so under CI=true;
#   - `./stoke prestart` exits 75, saying nothing, where a build, an install or a prerequisite is due;
#   - where the build is fresh: the CLI runs as the module io.stoke.cli from cli/target/lib,
#     with Stoke's named modules resolved there, and its main class comes from the AOT cache;
#   - the staleness check walks the build's inputs only: a venv/ (or anything else) in the checkout
#     is never looked at, and a changed source under a module's src/main does make the jar stale.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
failures=0
check() { # check <what> <command...>
  local what="$1"; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; failures=$((failures + 1)); fi
}

# 1. Wrong usage: the launcher's own (an unknown stack name) exits 2 before it sets anything up.
rc=0; STOKE_TEST_STACKS=debian99 "$ROOT/stoke" test >/dev/null 2>&1 || rc=$?
check "STOKE_TEST_STACKS=debian99 ./stoke test exits 2 (got $rc)" test "$rc" -eq 2

# The stacks' names: each of the three is a stack, a list of them is checked name by name, and one
# left out of STOKE_TEST_STACKS is not run (sourced: the functions only, nothing set up or built).
stacks() { # stacks <STOKE_TEST_STACKS> <function and args...>: the function's exit status
  local rc=0; (cd "$ROOT" && source ./stoke && STOKE_TEST_STACKS="$1" "${@:2}") >/dev/null 2>&1 || rc=$?; return "$rc"
}
check "STOKE_TEST_STACKS=debian12,debian13,torch214 is three stacks" stacks debian12,debian13,torch214 check_test_stacks
rc=0; stacks torch214,debian99 check_test_stacks || rc=$?
check "STOKE_TEST_STACKS=torch214,debian99 is wrong usage (got $rc)" test "$rc" -eq 2
check "torch 2.14.1's stack runs when STOKE_TEST_STACKS is unset" stacks "" stack_wanted torch214
check "torch 2.14.1's stack runs when STOKE_TEST_STACKS names it" stacks debian12,torch214 stack_wanted torch214
not() { ! "$@"; }
check "STOKE_TEST_STACKS=debian12 leaves torch 2.14.1's stack out" not stacks debian12 stack_wanted torch214
check "STOKE_TEST_STACKS=debian12 leaves Debian 13's stack out" not stacks debian12 stack_wanted debian13
line="$(cd "$ROOT" && source ./stoke && python_stacks_outcome 0 0 1)"
check "the last FAILED line names torch 2.14.1's stack (got: $line)" \
  test "$line" = "the Python tests on Debian 12 passed, on Debian 13 passed, on torch 2.14.1 failed (exit 1)"
# Where the machine has no mirror with torch 2.14.1 (a user's), its stack is skipped, saying so in
# one sentence, and under CI=true fails; in an empty cache folder, so no venv there is reused.
nomirror="$(mktemp -d)"
torch214() { # torch214 [CI]: test_torch214's exit status; its messages in $nomirror/said
  local rc=0
  (cd "$ROOT" && source ./stoke && XDG_CACHE_HOME="$nomirror" STOKE_PYPI_INDEX="file://$nomirror/none" \
    STOKE_PYPI_EXTRA_INDEX="file://$nomirror/none" STOKE_TEST_STACKS=torch214 CI="${1:-}" test_torch214) \
    >"$nomirror/said" 2>&1 || rc=$?
  return "$rc"
}
rc=0; torch214 || rc=$?
check "no mirror: torch 2.14.1's stack is skipped (got $rc)" test "$rc" -eq 0
check "no mirror: it says so, naming the mirror" grep -q "CANNOT: no local package mirror with torch 2.14.1 here (file://$nomirror/none" "$nomirror/said"
check "no mirror: it says it skips" grep -q "SKIPPING the Python tests on torch 2.14.1: its venv cannot be made here" "$nomirror/said"
rc=0; torch214 true || rc=$?
check "no mirror under CI=true: torch 2.14.1's stack fails (got $rc)" test "$rc" -eq 3
check "no mirror under CI=true: it says it fails" grep -q "FAILED: the torch 2.14.1 venv cannot be made here" "$nomirror/said"
rm -rf "$nomirror"

# `./stoke prestart` (stoke/_prestart.py, at `import stoke`) never builds, installs or records: where
# any is due it exits 75 and says nothing (the loader's own start then does it, and says so).
prestart() { # prestart <function and args...>: "<exit status> <bytes said>" with PRESTART set
  local rc=0 said
  said="$( (cd "$ROOT" && source ./stoke && PRESTART=1 && jar_is_fresh() { return 1; } && "$@") 2>&1 >/dev/null)" || rc=$?
  echo "$rc ${#said}"
}
got="$(prestart build_if_stale)"
check "prestart: a stale build exits 75, saying nothing, building nothing (got: $got)" test "$got" = "75 0"
got="$(prestart apt_install "a test" no-such-package)"
check "prestart: a package to install exits 75, saying nothing (got: $got)" test "$got" = "75 0"
got="$(prestart die "a test")"
check "prestart: a prerequisite missing exits 75, saying nothing (got: $got)" test "$got" = "75 0"

# The CLI's (picocli's) wrong usage, passed through: only where the jar is built and fresh, since
# this runs before the build.
if (cd "$ROOT" && source ./stoke && jar_is_fresh); then
  rc=0; STOKE_AOT=0 "$ROOT/stoke" bench --no-such-option >/dev/null 2>&1 || rc=$?
  check "./stoke bench --no-such-option exits 2 (got $rc)" test "$rc" -eq 2
  # 1b. The module path: the JVM's own account of what it resolved, where the CLI came from, and
  # that the AOT cache recorded on the module path is the one that loads the CLI's classes.
  resolution="$(STOKE_AOT=0 STOKE_JAVA_OPTS=--show-module-resolution "$ROOT/stoke" --version 2>&1 || true)"
  check "./stoke runs io.stoke.cli as the root module, from cli/target/lib" \
    grep -q "^root io.stoke.cli file://$ROOT/cli/target/lib/stoke-cli-" <<<"$resolution"
  check "./stoke resolves Stoke's named modules (io.stoke.loader) from cli/target/lib" \
    grep -qE "^(root )?io.stoke.loader file://$ROOT/cli/target/lib/stoke-loader-" <<<"$resolution"
  loads="$(STOKE_JAVA_OPTS=-Xlog:class+load=info "$ROOT/stoke" --version 2>&1 || true)"
  check "./stoke's AOT cache, recorded on the module path, holds the CLI's main class" \
    grep -q "io.stoke.cli.Main source: shared objects file" <<<"$loads"
else
  echo "skipped: ./stoke bench --no-such-option and the module path's checks (no fresh jar yet; the first check covers exit 2)"
fi

# 2. Staleness, in a made-up checkout: the launcher, a root pom with two modules, a venv/.
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cp "$ROOT/stoke" "$tmp/stoke"
mkdir -p "$tmp/a/src/main/java" "$tmp/b/src/main/resources" "$tmp/b/src/test/java" "$tmp/native/pixels" \
  "$tmp/cli/target/lib" "$tmp/venv/lib/python3/site-packages/pkg" "$tmp/clients/python"
printf '<project>\n  <modules>\n    <module>a</module>\n    <module>b</module>\n  </modules>\n</project>\n' >"$tmp/pom.xml"
for f in a/pom.xml b/pom.xml a/src/main/java/A.java b/src/main/resources/r.txt b/src/test/java/BTest.java \
  native/pixels/p.c venv/lib/python3/site-packages/pkg/m.py venv/pom.xml clients/python/x.py; do
  echo x >"$tmp/$f"
done
touch -d '2 hours ago' $(find "$tmp" -type f -o -type d)
touch -d '1 hour ago' "$tmp/cli/target/stoke.jar" "$tmp/cli/target/.stoke-build-stamp"
fresh() { (cd "$tmp" && source ./stoke && jar_is_fresh); }
stale() { ! fresh; }
inputs="$(cd "$tmp" && source ./stoke && build_inputs)"

check "build_inputs names a module's src/main" grep -qx "$tmp/a/src/main" <<<"$inputs"
check "build_inputs names nothing under venv/ or clients/" bash -c '! grep -qE "/(venv|clients)(/|$)" <<<"$1"' _ "$inputs"
check "a built checkout is fresh" fresh
touch "$tmp/venv/lib/python3/site-packages/pkg/m.py" "$tmp/venv/pom.xml" "$tmp/clients/python/x.py" \
  "$tmp/b/src/test/java/BTest.java"
check "files changed in venv/, clients/ and src/test leave it fresh" fresh
touch "$tmp/b/src/main/resources/r.txt"
check "a changed src/main file makes it stale" stale
touch -d '2 hours ago' "$tmp/b/src/main/resources/r.txt" "$tmp/b/src/main/resources" "$tmp/b/src/main"
check "back to fresh" fresh
touch "$tmp/native/pixels/p.c"
check "a changed native/pixels file makes it stale" stale
touch -d '2 hours ago' "$tmp/native/pixels/p.c"
mv "$tmp/cli/target/lib" "$tmp/cli/target/lib.away"
check "no lib folder (the module path) makes it stale" stale
mv "$tmp/cli/target/lib.away" "$tmp/cli/target/lib"
rm "$tmp/cli/target/.stoke-build-stamp"
check "no stamp (a build that did not finish) makes it stale" stale

(( failures == 0 )) || { echo "tests/test_launcher.sh: $failures check(s) FAILED"; exit 1; }
echo "tests/test_launcher.sh: all checks passed"
