#!/bin/sh
# Makes sure what the build, the tests and `make deb` use is present:
# libconfig (>= 1.5, with its static libconfig.a), Check and pkg-config to
# build; binutils (objcopy, readelf, strip), man-db (the man page test),
# dpkg-dev and lintian (make deb). Installs the missing ones with apt-get
# when running as root, otherwise names the packages.
pkgs=""
need() { pkgs="$pkgs $1"; }
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --atleast-version=1.5 libconfig 2>/dev/null &&
    [ -f "$(pkg-config --variable=libdir libconfig)/libconfig.a" ] || need libconfig-dev
  pkg-config --exists check 2>/dev/null || need check
else
  need pkg-config; need libconfig-dev; need check
fi
for t in objcopy:binutils readelf:binutils man:man-db dpkg-architecture:dpkg-dev lintian:lintian; do
  command -v "${t%%:*}" >/dev/null 2>&1 || case " $pkgs " in *" ${t#*:} "*) ;; *) need "${t#*:}" ;; esac
done
[ -z "$pkgs" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "deps: installing$pkgs" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y $pkgs >&2 ||
    { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y $pkgs >&2; } || exit 1
  exit 0
fi
echo "deps: missing build dependencies; install them with:" >&2
echo "  sudo apt-get install$pkgs" >&2
exit 1
