#!/bin/sh
# `make deb`: turns a staged `make install DESTDIR=ROOT PREFIX=/usr` into a
# Debian package and checks it with lintian (no error allowed).
#
#   /usr/lib/libnccl-tuner-pcie.so   the plugin, unversioned: NCCL opens it by
#                                    that exact name (NCCL_TUNER_PLUGIN=pcie ->
#                                    dlopen("libnccl-tuner-pcie.so"),
#                                    src/plugin/plugin_open.cc); /usr/lib, not
#                                    the multiarch directory, because the
#                                    plugin finds its profiles at
#                                    LIBDIR/../share/nccl-pcie-tuner/profiles
#   /usr/bin/pcie-tune, its man page, the docs, the profiles directory
#   DEBIAN/triggers                  activate-noawait ldconfig: dpkg runs
#                                    ldconfig after install and removal, so
#                                    the by-name lookup finds the library
#
# usage: mk/deb.sh ROOT VERSION OUT.deb
set -eu
root=$1 version=$2 out=$3
pkg=nccl-pcie-tuner
arch=$(dpkg --print-architecture)
doc=$root/usr/share/doc/$pkg

# The loader's cache is the package manager's business from here on.
find "$root" -name '*.so' -type f -exec chmod 644 {} +
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/lib/libnccl-tuner-pcie.so"
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/pcie-tune"
gzip -9n "$root/usr/share/man/man1/pcie-tune.1"

cat > "$doc/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: nccl-pcie-tuner
Comment: The plugin and pcie-tune are linked statically with libconfig
 (Debian's libconfig.a, source package libconfig); its terms follow. The
 project's LICENSE file says what the LGPL asks of a distributor of
 statically linked binaries.

Files: *
Copyright: 2026 The nccl-pcie-tuner developers
License: Expat

Files: libconfig (linked into usr/lib/libnccl-tuner-pcie.so and usr/bin/pcie-tune)
Copyright: 2005-2009 Mark A Lindner and contributors
License: LGPL-2.1+
 This library is free software; you can redistribute it and/or modify it
 under the terms of the GNU Lesser General Public License as published by the
 Free Software Foundation; either version 2.1 of the License, or (at your
 option) any later version.
 .
 On Debian systems, the full text of the GNU Lesser General Public License
 version 2.1 is in /usr/share/common-licenses/LGPL-2.1.

License: Expat
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to
 deal in the Software without restriction, including without limitation the
 rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 sell copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 IN THE SOFTWARE.
EOF

# A native package's changelog; its date is the last commit's when there is
# one, so the same tree builds the same package.
when=$(git log -1 --format=%cD 2>/dev/null || date -R)
printf '%s (%s) unstable; urgency=medium\n\n  * Package built by make deb.\n\n -- %s  %s\n' \
  "$pkg" "$version" "nccl-pcie-tuner developers <nccl-pcie-tuner@users.noreply.github.com>" "$when" |
  gzip -9n > "$doc/changelog.gz"

# Overrides, each for an NCCL convention (the comments in the file say which).
mkdir -p "$root/usr/share/lintian/overrides"
cat > "$root/usr/share/lintian/overrides/$pkg" <<'EOF'
# NCCL loads the plugin by file name (NCCL_TUNER_PLUGIN=pcie ->
# dlopen("libnccl-tuner-pcie.so"), NCCL src/plugin/plugin_open.cc): it is a
# plugin, not a library to link against, so it has no SONAME and no version
# in its name, and it lives where the loader finds that name.
nccl-pcie-tuner: sharedobject-in-library-directory-missing-soname [usr/lib/libnccl-tuner-pcie.so]
# Without a SONAME lintian sees no shared library, but ldconfig caches
# lib*.so files all the same, and NCCL's by-name dlopen consults that cache
# first: the trigger is what makes NCCL_TUNER_PLUGIN=pcie find a fresh
# install.
nccl-pcie-tuner: package-has-unnecessary-activation-of-ldconfig-trigger
# The profiles directory ships empty: the user measures or imports a
# profile of their own box into it; the example is beside it, never in it.
nccl-pcie-tuner: package-contains-empty-directory [usr/share/nccl-pcie-tuner/profiles/]
EOF

mkdir -p "$root/DEBIAN"
echo 'activate-noawait ldconfig' > "$root/DEBIAN/triggers"
# The C library version the binaries need: the newest GLIBC_x.y they use.
glibc=$(objdump -T "$root/usr/lib/libnccl-tuner-pcie.so" "$root/usr/bin/pcie-tune" |
  sed -n 's/.*GLIBC_\([0-9][0-9.]*\).*/\1/p' | sort -t. -k1,1n -k2,2n -k3,3n | tail -1)
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: nccl-pcie-tuner developers <nccl-pcie-tuner@users.noreply.github.com>
Installed-Size: $size
Depends: libc6 (>= $glibc)
Section: utils
Priority: optional
Description: NCCL tuner plugin and profiler for PCIe GPU boxes
 libnccl-tuner-pcie.so is an NCCL tuner plugin (tuner ABI v2-v7) that
 chooses algorithm, protocol and channels per collective and message size
 from a measured profile of the box, only where the profile shows a gain
 over NCCL's own choice. It is also an NCCL net plugin (multi-stream TCP).
 .
 pcie-tune measures profiles, imports nccl-tests logs, shows, checks and
 simulates decisions, and reads a job's NCCL log (doctor). Use it with
 NCCL_TUNER_PLUGIN=pcie and PCIE_TUNER_PROFILE, or put profiles into
 /usr/share/nccl-pcie-tuner/profiles.
EOF

(cd "$root" && find usr -type f -exec md5sum {} + | sort -k2) > "$root/DEBIAN/md5sums"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
echo "built $out"
# Warnings are printed; an error fails the build.
lintian --fail-on error --suppress-tags-from-file /dev/null "$out"
echo "lintian: no errors in $out"
