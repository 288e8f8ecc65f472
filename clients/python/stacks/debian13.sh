#!/usr/bin/env bash
# The Python package's tests on Debian 13 ("trixie"): Python 3.13, torch 2.x, torchvision 0.2x,
# numpy 2.x and Debian's own OpenJDK 25, with no Temurin and no JAVA_HOME. ./stoke test runs it
# after the same tests on the host's Debian 12, so that both stacks are tested on every run.
#
#   clients/python/stacks/debian13.sh root [DIR]               make (or reuse) the Debian 13 root
#   clients/python/stacks/debian13.sh test [DIR] [ARGS...]     run clients/python/tests inside it
#   clients/python/stacks/debian13.sh run [DIR] -- CMD...      run CMD inside it, in the checkout
#                                                             (a benchmark against torch 2.x, say)
#
# DIR defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/stoke/debian13-root. ARGS go to unittest (e.g.
# -k test_wheel). Both need root: debootstrap unpacks packages as root, and the test runs in a
# chroot with its own mounts.
#
# Exit status: 0 when done, 3 when this machine cannot do it (not root, no debootstrap to be had,
# Debian's archive unreachable or unverifiable), anything else when it failed. ./stoke test skips
# the stack on 3, saying so, except under CI=true, where it fails.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CHECKOUT="$(cd "$HERE/../../.." && pwd)"
DEFAULT_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/stoke/debian13-root"
MIRROR="${STOKE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=trixie
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

# What the root holds beyond the minimal base: what the tests import, what ./stoke serve runs on
# (Debian's OpenJDK 25, libturbojpeg0, libjpeg62-turbo for Stoke's region decoder, libspng0 and
# libwebp7 for its PNG and WebP decoder), and what
# the tests run besides: python3-venv for the wheel's install test (a venv with pip), gcc for the
# soak's C consumer. The JDK, not only the runtime, because the wheel's test builds the wheel
# with ./stoke wheel, which needs jlink and jdeps; Debian 13 puts the jmods that jlink links from
# in openjdk-25-jdk-headless itself. Maven is not here: the jar comes built from the host.
PACKAGES=(
  python3 python3-numpy python3-pil python3-torch python3-torchvision python3-venv
  openjdk-25-jdk-headless libturbojpeg0 libjpeg62-turbo libspng0 libwebp7
  gcc libc6-dev
)
# The stamp says what a finished root was made from; a root whose stamp differs is made again.
# Bump the layout number when what this script does to a root after debootstrap changes.
STAMP_NAME=.stoke-root-stamp
STAMP="suite=$SUITE
variant=minbase
layout=1
packages=$(printf '%s\n' "${PACKAGES[@]}" | sort | paste -sd' ')"

say() { printf 'debian13: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
cannot() { say "CANNOT: $*"; exit 3; }
mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1e6 }'; }

need_root() {
  [[ $(id -u) -eq 0 ]] || cannot "$1 needs root (debootstrap and chroot); run it as root"
}

# Mounts below DIR, deepest first, from this namespace's view.
mounts_below() {
  awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

ensure_debootstrap() {
  command -v debootstrap >/dev/null && return
  command -v apt-get >/dev/null || cannot "debootstrap is missing and there is no apt-get to install it"
  say "installing debootstrap (makes the Debian 13 root)"
  # An update only when the lists do not have it: ./stoke test has usually just updated them.
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || cannot "apt-get update failed (no network?)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null \
      || cannot "apt-get install debootstrap failed"
  fi
}

# Debian 12's debootstrap knows trixie only from 1.0.128+nmu2+deb12u1 on, and its keyring must
# verify trixie's Release file: check both here, so that a failure says which, in one line, rather
# than in the middle of debootstrap's log. wget comes with debootstrap (it downloads with it).
check_can_make_trixie() {
  [[ -e /usr/share/debootstrap/scripts/$SUITE ]] \
    || cannot "this debootstrap ($(dpkg-query -W -f '${Version}' debootstrap 2>/dev/null || echo '?')) has no script for $SUITE: apt-get install debootstrap from Debian 12's updates"
  [[ -f $KEYRING ]] || cannot "$KEYRING is missing: apt-get install debian-archive-keyring"
  local tmp rc=0
  tmp=$(mktemp -d)
  wget -q -T 30 -t 2 -O "$tmp/InRelease" "$MIRROR/dists/$SUITE/InRelease" || rc=$?
  if [[ $rc -ne 0 ]]; then
    rm -rf "$tmp"
    cannot "$MIRROR/dists/$SUITE/InRelease could not be downloaded (wget exit $rc): no network to Debian's archive?"
  fi
  if ! gpgv --keyring "$KEYRING" "$tmp/InRelease" >/dev/null 2>&1; then
    rm -rf "$tmp"
    cannot "$KEYRING cannot verify $SUITE's Release file: apt-get install debian-archive-keyring from Debian 12's updates"
  fi
  rm -rf "$tmp"
}

cmd_root() {
  local dir="${1:-$DEFAULT_DIR}"
  need_root "making the Debian 13 root"
  mkdir -p "$(dirname "$dir")"
  dir="$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")"
  # Two at once would debootstrap into one folder; the second waits and then reuses the root.
  exec {lock}>"$dir.lock"
  flock "$lock"
  if [[ -f "$dir/$STAMP_NAME" && "$(cat "$dir/$STAMP_NAME")" == "$STAMP" ]]; then
    say "reusing $dir ($(du -sh "$dir" 2>/dev/null | cut -f1), made from the same package list)"
    return 0
  fi
  ensure_debootstrap
  check_can_make_trixie
  # A root is never deleted while something is mounted in it: a bind mount of the checkout would
  # go with it. The test mounts only inside its own mount namespace, so none is expected here.
  local partial="$dir.partial" d
  for d in "$dir" "$partial"; do
    [[ -z "$(mounts_below "$d")" ]] || die "$d has mounts in it ($(mounts_below "$d" | paste -sd' ')); unmount them first"
  done
  [[ -e "$dir" ]] && say "$dir is incomplete or was made from another package list: making it again"
  rm -rf "$partial"
  say "making a Debian 13 root in $dir with debootstrap (minbase + ${PACKAGES[*]}); a few minutes..."
  local started=$SECONDS
  # In a mount namespace of its own, so that the /proc and /sys that debootstrap mounts in the
  # root go away with it even when it fails half-way.
  if ! unshare --mount --propagation private \
      debootstrap --variant=minbase --components=main --keyring="$KEYRING" \
      --include="$(IFS=,; echo "${PACKAGES[*]}")" "$SUITE" "$partial" "$MIRROR" >"$dir.log" 2>&1; then
    tail -n 20 "$dir.log" >&2
    die "debootstrap failed (the whole log: $dir.log)"
  fi
  local took=$((SECONDS - started)) debs
  debs=$(find "$partial/var/cache/apt/archives" -name '*.deb' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
  # The packages are unpacked: their .debs and the archive's lists would only take space.
  find "$partial/var/cache/apt/archives" -name '*.deb' -delete
  rm -rf "$partial/var/lib/apt/lists/"*
  # Nothing installs into the root after this: it holds what the stamp says and no more. Without
  # a source, an apt-get inside it (./stoke wanting Maven for a stale jar, say) fails loudly.
  : >"$partial/etc/apt/sources.list"
  printf '%s\n' "$STAMP" >"$partial/$STAMP_NAME.tmp"
  rm -rf "$dir"
  mv "$partial" "$dir"
  mv "$dir/$STAMP_NAME.tmp" "$dir/$STAMP_NAME"
  say "made $dir in ${took} s: $(mb "$debs") of packages downloaded, $(du -sh "$dir" | cut -f1) on disk"
}

# Checks the root and builds the jar on the host, for test and run.
ready_root() {
  local dir="$1"
  [[ -f "$dir/$STAMP_NAME" && "$(cat "$dir/$STAMP_NAME")" == "$STAMP" ]] \
    || die "$dir is not a finished Debian 13 root from this package list: run $0 root $dir first"
  # The jar (and the remote module's test classes, for the soak) are built on the host, with its
  # Maven and JDK: the root has neither Maven nor the Debian 12 toolchain, and must only run them.
  # ./stoke (its help) builds when sources changed and otherwise costs a fraction of a second.
  "$CHECKOUT/stoke" >/dev/null || die "building the jar on the host failed (./stoke)"
}

cmd_test() {
  local dir="$DEFAULT_DIR"
  if [[ $# -gt 0 && "$1" != -* ]]; then dir="$1"; shift; fi
  need_root "testing in the Debian 13 root"
  ready_root "$dir"
  local started=$SECONDS rc=0
  unshare --mount --propagation private "$BASH" "${BASH_SOURCE[0]}" _chroot "$dir" test "$@" || rc=$?
  say "Debian 13: the Python tests $([[ $rc -eq 0 ]] && echo passed || echo "FAILED (exit $rc)") in $((SECONDS - started)) s"
  return "$rc"
}

cmd_run() {
  local dir="$DEFAULT_DIR"
  if [[ $# -gt 0 && "$1" != -- ]]; then dir="$1"; shift; fi
  [[ $# -gt 1 && "$1" == -- ]] || die "usage: $0 run [DIR] -- CMD [ARGS...]"
  shift
  need_root "running in the Debian 13 root"
  ready_root "$dir"
  unshare --mount --propagation private "$BASH" "${BASH_SOURCE[0]}" _chroot "$dir" run "$@"
}

# Runs in the private mount namespace that cmd_test made: every mount here leaves with it, and the
# trap unmounts them anyway when a process left behind (a producer, say) would keep it alive.
cmd_chroot() {
  local dir="$1" mode="$2"; shift 2
  # shellcheck disable=SC2064 # $dir now: the trap runs after this function's locals are gone
  trap "for m in \$(mounts_below $(printf %q "$dir")); do umount -l \"\$m\" 2>/dev/null || true; done" EXIT
  # The root a mount point of its own: unshare -m inside it (the wheel's test hides the JDKs so)
  # makes / private, which fails with EINVAL where / is a plain folder.
  mount --bind "$dir" "$dir"
  mount --rbind /proc "$dir/proc"
  mount --rbind /sys "$dir/sys"
  mount --rbind /dev "$dir/dev" # with /dev/shm, where the producer's ring lives, and /dev/pts
  [[ -d "$dir/dev/shm" ]] || die "$dir/dev/shm is missing after binding /dev"
  # The host's names (torch.distributed's gloo looks the host name up).
  mount --bind /etc/hosts "$dir/etc/hosts"
  # The checkout at the same path, so that ./stoke's freshness check and the tests' paths hold.
  mkdir -p "$dir$CHECKOUT"
  mount --bind "$CHECKOUT" "$dir$CHECKOUT"
  # The soak's S3 server runs on the remote module's test class path (remote/target/
  # test-classpath.txt, written by the host's build), whose jars are in the host's Maven repository:
  # that folder (the one holding every entry outside the checkout), read-only, at the same path.
  local cp="$CHECKOUT/remote/target/test-classpath.txt" repo
  if [[ -f "$cp" ]]; then
    repo=$(tr ':' '\n' <"$cp" | grep -v -e "^$CHECKOUT/" -e '^$' | awk '
      { n = split($0, p, "/"); if (NR == 1) { m = n - 1; for (i = 1; i <= m; i++) c[i] = p[i]; next }
        for (i = 1; i <= m && i < n; i++) if (p[i] != c[i]) break; m = i - 1 }
      END { s = ""; for (i = 2; i <= m; i++) s = s "/" c[i]; print s }')
    if [[ -n "$repo" && "$repo" != / && -d "$repo" ]]; then
      mkdir -p "$dir$repo"
      mount --bind "$repo" "$dir$repo"
      mount -o remount,bind,ro "$dir$repo"
    fi
  fi
  # A clean environment: no JAVA_HOME, no host PATH (and so no Temurin), Debian 13's python3.
  chroot "$dir" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" STOKE_HOME="$CHECKOUT" \
    /bin/bash -c '
      set -euo pipefail
      cd "$STOKE_HOME"
      [[ -z "${JAVA_HOME:-}" ]]
      /usr/bin/python3 -c "import sys, numpy, PIL, torch, torchvision
print(f\"debian13: python {sys.version.split()[0]}, torch {torch.__version__}, torchvision {torchvision.__version__}, numpy {numpy.__version__}, PIL {PIL.__version__}\", file=sys.stderr)"
      printf "debian13: %s (%s; /usr/lib/jvm holds %s)\n" "$(java -version 2>&1 | head -n1)" \
        "$(readlink -f "$(command -v java)")" "$(ls /usr/lib/jvm | paste -sd" ")" >&2
      if [[ "$1" == run ]]; then shift; exec "$@"; fi
      shift
      exec /usr/bin/python3 -m unittest discover -s "$STOKE_HOME/clients/python/tests" -v "$@"
    ' bash "$mode" "$@"
}

case "${1:-}" in
  root) shift; cmd_root "$@" ;;
  test) shift; cmd_test "$@" ;;
  run) shift; cmd_run "$@" ;;
  _chroot) shift; cmd_chroot "$@" ;;
  *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
