#!/usr/bin/env bash
# Runs a command in a fresh Debian 12 (bookworm) root made by
# `debootstrap --variant=minbase`, on a clean clone of the repository's
# committed HEAD. See usage() below, or run with --help.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: tools/fresh_root.sh [OPTIONS] [--] CMD [ARG...]

Runs CMD as root inside a fresh, minimal Debian 12 (bookworm) root, in a clean
clone of this repository at /src: what a new Debian machine that has only
`git clone`d sluice sees. Example: tools/fresh_root.sh bash tools/test.sh

  1. The bare root comes from `debootstrap --variant=minbase bookworm`, using the
     Debian mirror that apt on this machine already uses (read from
     /etc/apt/sources.list and /etc/apt/sources.list.d/*.list|*.sources).
     It is cached untouched as a tarball (default /var/cache/sluice-fresh-root,
     rebuilt when older than 7 days); nothing installed by CMD ever reaches it.
  2. Each run unpacks it into a new temporary directory, mounts /proc, /sys
     (read-only), a minimal /dev, /dev/pts (a new instance) and /dev/shm (tmpfs)
     inside it, copies /etc/resolv.conf and this machine's CA bundle (for a
     TLS-inspecting proxy; NODE_EXTRA_CA_CERTS names it), sets dpkg's
     force-unsafe-io (no fsync per file, as container images do), and clones
     the repository into /src.
  3. CMD runs under chroot in /src, with a clean environment: PATH, HOME=/root,
     LANG=C.UTF-8, plus TERM, CI, http(s)_proxy/no_proxy and
     every SLUICE_* variable passed through from the caller.
  4. CMD runs in new mount and PID namespaces: the mounts never show on this
     machine, and when CMD ends (or this script is interrupted) every process
     it left is killed and the mounts go away. The temporary root is then
     deleted. The exit status is CMD's.

Only COMMITTED changes are tested: the clone is of HEAD (or --rev), so
uncommitted or untracked changes in the working tree are NOT included,
unless --worktree is given.
Needs root, debootstrap (installed from Debian's packages when missing),
unshare and chroot. Prints the time each phase took on stderr.

Options:
  --from DIR    clone the repository at DIR instead of the one holding this script
  --rev REV     check out REV (any commit-ish of the source repository) instead of HEAD
  --worktree    then copy the working tree's changes over the clone: modified and
                untracked (not ignored) files, deletions; what .ci/run tests
  --copy PATH   also copy the file or folder PATH (ignored build outputs, say) into
                /src/ under its own name; may be given more than once
  --bind PATH   make this machine's PATH (a toolkit outside Debian's packages, such as
                /usr/local/cuda) visible read-only at the same path in the root; a
                symbolic link is made again there, to its target, bound the same way;
                may be given more than once
  --export SRC DEST
                after CMD ends (whatever its status), copy /src/SRC out of the root
                to DEST on this machine (what CMD built, for a later check); may be
                given more than once; a missing SRC is only noted
  --refresh     rebuild the cached bare root before running
  --no-cache    bootstrap a new root for this run only; neither read nor write the cache
  --keep        keep the temporary root afterwards (its path is printed)
  -h, --help    print this help

Environment:
  SLUICE_FRESH_ROOT_CACHE    cache directory (default /var/cache/sluice-fresh-root)
  SLUICE_FRESH_ROOT_TMPDIR   where temporary roots are made (default /var/tmp)
  SLUICE_FRESH_ROOT_MAX_AGE  cache lifetime in days (default 7)
  SLUICE_FRESH_ROOT_MIRROR   Debian mirror URI, instead of the one apt uses here
EOF
}

readonly SUITE=bookworm VARIANT=minbase
# Bumped when the way the bare root is made changes, so that old caches are not reused.
readonly CACHE_FORMAT=1

log() { printf 'fresh_root: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# ---------------------------------------------------------------------------
# Inside new mount and PID namespaces (internal: started by the outer part), as
# their PID 1: mounts what a booted machine has, chroots, runs CMD. The mounts
# exist only in this namespace, and every process in it is killed when this one
# ends, whatever happens.
if [ "${1-}" = "--in-namespace" ]; then
  root=$2
  shift 2
  mount --make-rprivate /
  mount -t proc -o nosuid,nodev,noexec proc "$root/proc"
  mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys" 2>/dev/null ||
    mount --rbind -o ro /sys "$root/sys"
  # /dev: a tmpfs with the usual nodes (bound from this machine's), like a container's.
  mount -t tmpfs -o nosuid,mode=0755,size=64k dev "$root/dev"
  for node in null zero full random urandom tty; do
    : >"$root/dev/$node"
    mount --bind "/dev/$node" "$root/dev/$node"
  done
  ln -s /proc/self/fd "$root/dev/fd"
  ln -s /proc/self/fd/0 "$root/dev/stdin"
  ln -s /proc/self/fd/1 "$root/dev/stdout"
  ln -s /proc/self/fd/2 "$root/dev/stderr"
  ln -s /proc/kcore "$root/dev/core"
  mkdir -m 0755 "$root/dev/pts"
  mkdir -m 1777 "$root/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "$root/dev/pts"
  ln -s pts/ptmx "$root/dev/ptmx"
  mount -t tmpfs -o nosuid,nodev,mode=1777 shm "$root/dev/shm"
  # --bind: read-only at the same path (a bind mount is read-only only once remounted so).
  while IFS= read -r path; do
    [ -n "$path" ] || continue
    mkdir -p "$root$path"
    mount --bind "$path" "$root$path"
    mount -o remount,bind,ro "$root$path"
  done <<<"${SLUICE_FRESH_ROOT_BINDS-}"

  env_args=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
  [ -f "$root/etc/fresh-root/host-ca-certificates.crt" ] &&
    env_args+=(NODE_EXTRA_CA_CERTS=/etc/fresh-root/host-ca-certificates.crt)
  while IFS= read -r name; do
    case $name in
      SLUICE_FRESH_ROOT_*) ;;
      SLUICE_* | CI | TERM | http_proxy | https_proxy | no_proxy | \
        HTTP_PROXY | HTTPS_PROXY | NO_PROXY) env_args+=("$name=${!name}") ;;
    esac
  done < <(compgen -e)
  # --default-signal: CMD starts with default signal handling, as from a login shell
  # (this process is started in the background, so it ignores SIGINT and SIGQUIT).
  chroot "$root" /usr/bin/env --default-signal -i -C /src "${env_args[@]}" "$@"
  exit $?
fi

# ---------------------------------------------------------------------------
# Outside: options, the cached bare root, the temporary root, the clone.
self=$(readlink -f "$0")
from=$(dirname "$self")/..
rev=HEAD
refresh=0 use_cache=1 keep=0 worktree=0
copies=() binds=() exports=()
while [ $# -gt 0 ]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --from) [ $# -ge 2 ] || die "--from needs a directory"; from=$2; shift 2 ;;
    --rev) [ $# -ge 2 ] || die "--rev needs a commit"; rev=$2; shift 2 ;;
    --worktree) worktree=1; shift ;;
    --copy) [ $# -ge 2 ] || die "--copy needs a path"; [ -e "$2" ] || die "--copy: no $2"
      copies+=("$(readlink -f "$2")"); shift 2 ;;
    --bind) [ $# -ge 2 ] || die "--bind needs a path"; [ -e "$2" ] || die "--bind: no $2"
      case $2 in /*) ;; *) die "--bind needs an absolute path" ;; esac
      binds+=("$2"); shift 2 ;;
    --export) [ $# -ge 3 ] || die "--export needs SRC and DEST"
      case $2 in /* | *..*) die "--export: SRC is a path under /src, without .." ;; esac
      exports+=("$2" "$3"); shift 3 ;;
    --refresh) refresh=1; shift ;;
    --no-cache) use_cache=0; shift ;;
    --keep) keep=1; shift ;;
    --) shift; break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "must run as root (it uses debootstrap, mount and chroot)"
for tool in unshare chroot mount git tar; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
# With no stdin at all (fd 0 closed), give CMD an empty one.
{ : <&0; } 2>/dev/null || exec </dev/null

cache_dir=${SLUICE_FRESH_ROOT_CACHE:-/var/cache/sluice-fresh-root}
tmp_base=${SLUICE_FRESH_ROOT_TMPDIR:-/var/tmp}
max_age_days=${SLUICE_FRESH_ROOT_MAX_AGE:-7}
arch=$(dpkg --print-architecture)
t_start=$(now)

# The repository and commit to clone.
git_from() { git -c safe.directory='*' -C "$from" "$@"; }
from=$(git_from rev-parse --show-toplevel) || die "$from is not a git repository"
commit=$(git_from rev-parse --verify --quiet "$rev^{commit}") || die "no commit $rev in $from"
if [ "$worktree" = 0 ] && [ -n "$(git_from status --porcelain --untracked-files=normal 2>/dev/null | head -1)" ]; then
  log "note: $from has uncommitted changes; they are NOT in the fresh root (it clones $commit)"
fi

# The Debian mirror apt uses here: each "URI SUITE COMPONENTS..." of a deb entry.
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//g' "$f" | awk '$1 == "deb" && NF >= 4 { $1 = ""; print }'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: stanzas separated by blank lines; continuation lines (Signed-By keys) skipped.
    awk 'function flush(  nu, ns, u, s, i, j) {
           if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no") {
             nu = split(uris, u, " "); ns = split(suites, s, " ")
             for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j], comps
           }
           types = uris = suites = comps = ""; enabled = "yes"
         }
         BEGIN { enabled = "yes" }
         /^[ \t]*$/ { flush(); next }
         /^#/ || /^[ \t]/ { next }
         { key = tolower($0); sub(/:.*/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
           if (key == "types") types = val; else if (key == "uris") uris = val
           else if (key == "suites") suites = val; else if (key == "components") comps = val
           else if (key == "enabled") enabled = val }
         END { flush() }' "$f"
  done
}
mirror_for() {  # the first URI that serves suite $1 with component main
  apt_entries | awk -v s="$1" '$2 == s { for (i = 3; i <= NF; i++) if ($i == "main") { print $1; exit } }' |
    sed 's:/*$::'
}
mirror=${SLUICE_FRESH_ROOT_MIRROR:-$(mirror_for "$SUITE")}
[ -n "$mirror" ] || die "apt here has no 'deb ... $SUITE main' source; set SLUICE_FRESH_ROOT_MIRROR"
updates_mirror=$(mirror_for "$SUITE-updates")
security_mirror=$(mirror_for "$SUITE-security")

# Makes the bare root in directory $1: debootstrap, then nothing but its own cleanup.
bootstrap() {
  local dir=$1 includes=()
  if ! command -v debootstrap >/dev/null; then
    log "installing debootstrap from Debian's packages"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; } ||
      die "could not install debootstrap"
  fi
  case $mirror in https:*) includes=(--include=ca-certificates) ;; esac
  log "debootstrap --variant=$VARIANT $SUITE from $mirror"
  debootstrap --variant="$VARIANT" --arch="$arch" "${includes[@]}" "$SUITE" "$dir" "$mirror" \
    >"$dir.debootstrap.log" 2>&1 || { tail -20 "$dir.debootstrap.log" >&2; die "debootstrap failed (log: $dir.debootstrap.log)"; }
  rm -f "$dir.debootstrap.log"
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/etc/resolv.conf "$dir"/etc/hostname
}

# Temporary roots of runs that were killed: their script is gone, nothing is mounted
# in them here and no process runs in them (left by a SIGKILL, say).
chrooted_in() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" != "$1" ] || return 0
  done
  return 1
}
for old in "$tmp_base"/sluice-fresh-root.*; do
  [ -f "$old/owner.pid" ] || continue
  pid=$(cat "$old/owner.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && ! grep -qF " $old/" /proc/self/mountinfo &&
     ! chrooted_in "$old/root"; then
    log "removing $old, left by a run that was killed"
    rm -rf --one-file-system "$old"
  fi
done

work=$(mktemp -d "$tmp_base/sluice-fresh-root.XXXXXX")
echo $$ >"$work/owner.pid"
root=$work/root
inner=""
cleanup() {
  local rc=$? t
  trap - EXIT INT TERM
  # Interrupted: killing unshare kills its child (--kill-child), the namespaces' PID 1,
  # and with it every process of the run.
  [ -z "$inner" ] || { kill -KILL "$inner" 2>/dev/null; wait "$inner" 2>/dev/null || true; }
  t=$(now)
  # The mounts were made in the namespace that died with the inner process; refuse to
  # delete anything that still has a mount under it.
  if grep -qF " $work/" /proc/self/mountinfo; then
    log "error: something is still mounted under $work; not deleting it"
    rc=$((rc == 0 ? 1 : rc))
  elif [ "$keep" = 1 ]; then
    log "kept the root: $root"
  else
    rm -rf --one-file-system "$work"
    log "cleanup: $(since "$t")"
  fi
  log "total: $(since "$t_start"), exit status $rc"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Phase 1: the bare root, from the cache or new.
t=$(now)
key=$(printf '%s\n' "$CACHE_FORMAT" "$SUITE" "$VARIANT" "$arch" "$mirror" | sha256sum | cut -c1-12)
tarball=$cache_dir/$SUITE-$VARIANT-$arch-$key.tar.gz
mkdir "$root"
if [ "$use_cache" = 0 ]; then
  bootstrap "$root"
  log "bootstrap (uncached): $(since "$t")"
else
  mkdir -p "$cache_dir"
  exec 9>"$cache_dir/lock"
  flock 9  # one writer; readers wait for it
  if [ "$refresh" = 1 ] || [ ! -f "$tarball" ] ||
     [ -n "$(find "$tarball" -mtime +"$max_age_days" 2>/dev/null)" ]; then
    bare=$work/bare
    mkdir "$bare"
    bootstrap "$bare"
    tar -C "$bare" --numeric-owner -czf "$tarball.tmp" .
    mv -f "$tarball.tmp" "$tarball"
    rm -rf --one-file-system "$bare"
    find "$cache_dir" -maxdepth 1 -name "$SUITE-$VARIANT-*.tar.gz" ! -name "${tarball##*/}" -delete
    log "bootstrap into the cache ($tarball): $(since "$t")"
    t=$(now)
  fi
  tar -C "$root" --numeric-owner -xzf "$tarball"
  exec 9>&-
  log "unpack the cached bare root: $(since "$t")"
fi

# Phase 2: what this run adds to the root: apt's sources and how apt here reaches
# them, DNS, the clone.
t=$(now)
{
  echo "deb $mirror $SUITE main"
  [ -z "$updates_mirror" ] || echo "deb $updates_mirror $SUITE-updates main"
  [ -z "$security_mirror" ] || echo "deb $security_mirror $SUITE-security main"
} >"$root/etc/apt/sources.list"
# The Acquire settings apt here needs to reach that mirror (proxies, a snapshot's
# expired Valid-Until), nothing else.
apt-config dump 2>/dev/null |
  grep -E '^Acquire::(https?::Proxy|ftp::Proxy|Check-Valid-Until|Check-Date|Max-FutureTime) ' \
  >"$root/etc/apt/apt.conf.d/00fresh-root-host" || rm -f "$root/etc/apt/apt.conf.d/00fresh-root-host"
cat -- /etc/resolv.conf >"$root/etc/resolv.conf" 2>/dev/null || true
# dpkg without an fsync per file, as Debian's container images set it: the root is thrown away
# after the run. What gets installed is the same (setup.sh in a fresh root: 201 -> 162 s).
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/00fresh-root-unsafe-io"
# The network's trust anchors too: where HTTPS goes through a TLS-inspecting proxy (as on these
# machines, whose package registries are reached so), a new root's own CA list does not know its
# CA. Kept apart from the root's CA files, and named by NODE_EXTRA_CA_CERTS (npm).
host_ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
if [ -r "$host_ca" ]; then
  mkdir -p "$root/etc/fresh-root"
  cat -- "$host_ca" >"$root/etc/fresh-root/host-ca-certificates.crt"
fi
git -c safe.directory='*' clone --quiet --no-checkout --no-hardlinks "$from" "$root/src"
git -C "$root/src" -c advice.detachedHead=false checkout --quiet --detach "$commit"
if [ "$worktree" = 1 ]; then
  # What differs from $commit in the working tree: deleted files, then every tracked
  # or untracked file that is not ignored (copied whole; unchanged ones are identical).
  ndel=0
  while IFS= read -r -d '' f; do
    rm -f -- "$root/src/$f"; ndel=$((ndel + 1))
  done < <(git_from diff -z --name-only --diff-filter=D "$commit" --)
  git_from ls-files -z --cached --others --exclude-standard |
    (cd "$from" && tar --null --no-recursion --ignore-failed-read -cf - -T - 2>/dev/null) |
    tar -C "$root/src" -xf -
  log "--worktree: $(git -C "$root/src" status --porcelain | wc -l) paths differ from $(git -C "$root/src" rev-parse --short HEAD) ($ndel deleted)"
fi
for path in ${copies[@]+"${copies[@]}"}; do
  cp -a -- "$path" "$root/src/"
  log "--copy: $path -> /src/$(basename "$path") ($(du -sm "$path" | cut -f1) MB)"
done
# --bind: a link is made again in the root and its target bound; the mounts themselves are made
# in the namespace (phase 3).
bind_paths=""
for path in ${binds[@]+"${binds[@]}"}; do
  if [ -L "$path" ]; then
    target=$(readlink -f "$path")
    mkdir -p "$root$(dirname "$path")"
    ln -sfn "$target" "$root$path"
    path=$target
  fi
  bind_paths+="$path"$'\n'
  log "--bind: $path (read-only)"
done
log "prepare root $root ($(git -C "$root/src" log -1 --format='%h %s' | cut -c1-72)): $(since "$t")"

# Phase 3: CMD, in new mount and PID namespaces.
t=$(now)
log "run: $*"
set +e
SLUICE_FRESH_ROOT_BINDS=$bind_paths \
  unshare --mount --propagation private --pid --fork --kill-child -- \
  bash "$self" --in-namespace "$root" "$@" <&0 &
inner=$!
wait "$inner"
status=$?
inner=""
set -e
log "command: $(since "$t"), exit status $status"
set -- ${exports[@]+"${exports[@]}"}
while [ $# -gt 0 ]; do
  if [ -e "$root/src/$1" ]; then
    mkdir -p "$(dirname "$2")"
    rm -rf -- "$2"
    cp -a -- "$root/src/$1" "$2"
    log "--export: /src/$1 -> $2"
  else
    log "--export: no /src/$1 to copy"
  fi
  shift 2
done
exit "$status"
