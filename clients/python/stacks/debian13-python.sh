#!/usr/bin/env bash
# Debian 13's python3 (Pillow 11.1, torch 2.6, torchvision 0.21), run from the root that
# debian13.sh makes, as the Python that the Java tests' torchvision references run on:
#
#   STOKE_TEST_PYTHON=$PWD/clients/python/stacks/debian13-python.sh \
#     mvn -o -pl loader -am test -Dtest='ColourOpsTest,AffineOpsTest' -Dsurefire.failIfNoSpecifiedTests=false
#
# The host's /tmp is the root's, since the tests hand their images over in files there; the
# command runs in the caller's directory where that is under /tmp, else in /tmp. The mounts live
# in a mount namespace of their own and go with it. Needs root (unshare and chroot); exit status 3
# where this machine cannot do it, as debian13.sh's.
set -euo pipefail

dir="${STOKE_DEBIAN13_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/stoke/debian13-root}"
if [[ $(id -u) -ne 0 ]]; then
  echo "debian13-python: needs root (unshare and chroot)" >&2
  exit 3
fi
if [[ ! -x "$dir/usr/bin/python3" ]]; then
  echo "debian13-python: no Debian 13 root at $dir: make it with clients/python/stacks/debian13.sh root" >&2
  exit 3
fi
exec unshare --mount --propagation private /bin/bash -c '
  set -e
  dir=$1 cwd=$2
  shift 2
  mount --bind /tmp "$dir/tmp"
  mount --rbind /proc "$dir/proc"
  mount --rbind /dev "$dir/dev"
  mount --rbind /sys "$dir/sys"
  case "$cwd" in /tmp | /tmp/*) ;; *) cwd=/tmp ;; esac
  exec chroot "$dir" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 \
    /bin/sh -c "cd \"\$0\" && exec /usr/bin/python3 \"\$@\"" "$cwd" "$@"
' bash "$dir" "$PWD" "$@"
