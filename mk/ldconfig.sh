#!/bin/sh
# After `make install` / `make uninstall`: refresh the loader's cache when
# that is what makes NCCL_TUNER_PLUGIN=pcie work, else say what to do.
#
# NCCL turns NCCL_TUNER_PLUGIN=pcie into dlopen("libnccl-tuner-pcie.so")
# (src/plugin/plugin_open.cc, openPluginLib), a bare name the loader finds
# only through LD_LIBRARY_PATH or its cache (ld.so.cache), so a library
# copied into /usr/local/lib is invisible until ldconfig has run.
#
# usage: mk/ldconfig.sh install|uninstall LIBDIR [DESTDIR]
# LDCONFIG (environment) names the ldconfig to run; the tests use a fake.
set -u
what=$1 libdir=$2 destdir=${3:-}
ldconfig=${LDCONFIG:-ldconfig}
so=$libdir/libnccl-tuner-pcie.so

# A staged install (DESTDIR) is a package being built: the package's own
# scripts run ldconfig on the target machine.
if [ -n "$destdir" ]; then
  exit 0
fi

# The directories the loader caches, as ldconfig itself lists them
# ("DIR: (from FILE:LINE)"); -N -X: change nothing while listing.
real=$(readlink -f "$libdir" 2>/dev/null || echo "$libdir")
cached=no
for d in $("$ldconfig" -v -N -X 2>/dev/null | sed -n 's/^\([^[:space:]][^:]*\):.*/\1/p'); do
  if [ "$(readlink -f "$d" 2>/dev/null || echo "$d")" = "$real" ]; then
    cached=yes
    break
  fi
done

if [ "$cached" = yes ] && [ "$(id -u)" -eq 0 ]; then
  if "$ldconfig"; then
    if [ "$what" = install ]; then
      echo "ran ldconfig: NCCL_TUNER_PLUGIN=pcie now finds $so"
      echo "In a job: export NCCL_TUNER_PLUGIN=$so   (or =pcie)"
    fi
    [ "$what" = uninstall ] && echo "ran ldconfig: the loader's cache no longer lists libnccl-tuner-pcie.so"
    exit 0
  fi
  echo "warning: ldconfig failed; run it yourself before using NCCL_TUNER_PLUGIN=pcie" >&2
  exit 0
fi

if [ "$what" = uninstall ]; then
  [ "$cached" = yes ] && echo "note: run 'sudo ldconfig' to drop libnccl-tuner-pcie.so from the loader's cache"
  exit 0
fi
echo
echo "Installed $so."
echo "Use it in a job with the absolute path, which always works:"
echo "  export NCCL_TUNER_PLUGIN=$so"
if [ "$cached" = yes ]; then
  echo "NCCL_TUNER_PLUGIN=pcie works once the loader's cache knows the library: run 'sudo ldconfig'."
else
  echo "NCCL_TUNER_PLUGIN=pcie needs $libdir in the loader's path: add it to a file in"
  echo "/etc/ld.so.conf.d/ and run 'sudo ldconfig', or to LD_LIBRARY_PATH."
fi
