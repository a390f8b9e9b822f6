# Sourced by docker/setup-engine.sh and docker/base/make-base-image.sh:
# apt_mirror prints the Debian mirror this machine's apt sources already use
# (deb822 or one-line format), else deb.debian.org.
apt_mirror() {
  local m
  m=$(grep -hs -m1 -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -1 || true)
  [ -n "$m" ] || m=$(grep -hs -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
                     | grep -v security | awk '{for(i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' || true)
  echo "${m:-http://deb.debian.org/debian}"
}
