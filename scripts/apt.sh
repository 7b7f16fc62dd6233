# Sourced by the set-up scripts. apt_ensure PKG...: install the Debian packages that are missing (with sudo
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
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
