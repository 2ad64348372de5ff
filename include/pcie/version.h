/*
 * The one version of nccl-pcie-tuner: what `pcie-tune --version` prints,
 * what a profile's provenance.tool records, and what the Makefile reads for
 * the man page and the Debian package.
 */
#ifndef PCIE_VERSION_H
#define PCIE_VERSION_H

#define PT_VERSION "0.1.0"

#endif
