# Sourced by the set-up scripts.

# quietly WHAT CMD...: run CMD with its output kept in a log; say WHAT was done, or on failure print the log and
# return CMD's exit status, so that set-up shows a line per step unless something goes wrong.
quietly() {
  local what=$1 log rc=0
  shift
  log=$(mktemp "${TMPDIR:-/tmp}/ioadvisor-setup.XXXXXX")
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    echo "$what"
  else
    cat "$log" >&2
    echo "failed ($rc): $*" >&2
  fi
  rm -f "$log"
  return "$rc"
}

# apt_ensure PKG...: install the Debian packages that are missing (with sudo
# when not root); nothing when all are there or when IOADVISE_SKIP_APT=1.
apt_ensure() {
  [ "${IOADVISE_SKIP_APT:-0}" != 1 ] || return 0
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  quietly "apt: package lists updated" $sudo apt-get update
  quietly "apt: installed ${missing[*]}" \
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
}

# apt_enable_nonfree: add bookworm's non-free component (IOzone lives there) on the Debian mirror the machine
# already uses, in a sources entry of its own; nothing if it is already listed or IOADVISE_SKIP_APT=1.
apt_enable_nonfree() {
  [ "${IOADVISE_SKIP_APT:-0}" != 1 ] || return 0
  if grep -rqsE "(^|[[:space:]])non-free([[:space:]]|$)" /etc/apt/sources.list /etc/apt/sources.list.d/; then return 0; fi
  local mirror sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  # the first Debian archive URI in use (deb822 "URIs:" or one-line "deb URI" entries), comments ignored
  mirror=$( { sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
             sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\).*/\2/p' /etc/apt/sources.list 2>/dev/null || true
           } | grep -m1 '/debian/\?$' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  printf 'Types: deb\nURIs: %s\nSuites: bookworm\nComponents: non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" | $sudo tee /etc/apt/sources.list.d/ioadvisor-nonfree.sources >/dev/null
  quietly "apt: non-free component of $mirror added" $sudo apt-get update
}
