# Readers of other tools' output (libpcie-import.a): the nccl-tests log
# parser and the profile builder. Depends on tuner/ only.
IMPORT_SRCS += $(wildcard import/*.c)
