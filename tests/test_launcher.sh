#!/usr/bin/env bash
# Quick checks of ./stoke itself (no build, no JVM; `./stoke test` runs this before Maven):
#   - a wrong usage exits 2 (docs/cli.md#exit-codes);
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
