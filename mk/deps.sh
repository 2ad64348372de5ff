#!/bin/sh
# Makes sure libconfig (>= 1.5), Check and pkg-config are present; installs
# them with apt-get when running as root, otherwise names the packages.
ok=1
command -v pkg-config >/dev/null 2>&1 || ok=0
if [ $ok = 1 ]; then
  pkg-config --atleast-version=1.5 libconfig 2>/dev/null || ok=0
  pkg-config --exists check 2>/dev/null || ok=0
fi
[ $ok = 1 ] && exit 0
pkgs="libconfig-dev check pkg-config"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing $pkgs" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y $pkgs >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y $pkgs >&2; } || exit 1
  exit 0
fi
echo "deps: missing build dependencies; install them with:" >&2
echo "  sudo apt-get install $pkgs" >&2
exit 1
