# docs/cli.md to the pcie-tune(1) man page, at build time, so the manual and
# the man page cannot drift (Makefile, MAN). Handles the Markdown that
# docs/cli.md uses: headings, paragraphs, ``` blocks, - and 1. lists,
# tables (one .TP entry per row: the first cell, then the others), `code`,
# **bold**, *italic* and [links](target). POSIX awk (mawk, gawk, busybox).
#
# usage: awk -v version=X -f mk/md2man.awk docs/cli.md > pcie-tune.1

# Characters roff would read as its own: backslashes, and hyphens (which
# roff would set as hyphens, not the minus signs options are typed with).
function esc(s) {
  gsub(/\\/, "\\e", s)
  gsub(/-/, "\\-", s)
  return s
}

# A line of text as roff: code spans first (their '*' and '[' are literal),
# then bold, italics and links; a leading '.' or "'" is protected.
function inline(s,    out, code, t, u) {
  s = esc(s)
  out = ""
  while (match(s, /`[^`]*`/)) {
    code = substr(s, RSTART + 1, RLENGTH - 2)
    gsub(/\*/, "\001", code)
    gsub(/\[/, "\002", code)
    out = out substr(s, 1, RSTART - 1) "\\fB" code "\\fR"
    s = substr(s, RSTART + RLENGTH)
  }
  s = out s
  while (match(s, /\*\*[^*]+\*\*/))
    s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" substr(s, RSTART + RLENGTH)
  while (match(s, /\*[^* ][^*]*\*/))
    s = substr(s, 1, RSTART - 1) "\\fI" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
  while (match(s, /\[[^]]*\]\([^)]*\)/)) {
    t = substr(s, RSTART + 1, RLENGTH - 2)
    u = index(t, "](")
    s = substr(s, 1, RSTART - 1) substr(t, 1, u - 1) substr(s, RSTART + RLENGTH)
  }
  gsub(/\001/, "*", s)
  gsub(/\002/, "[", s)
  if (s ~ /^[.']/) s = "\\&" s
  return s
}

function para() {
  if (!in_para) print ".PP"
  in_para = 1
}

# One table row's cells, "\|" inside a cell kept as '|'.
function cells(line, arr,    n, i) {
  gsub(/\\\|/, "\003", line)
  sub(/^\|/, "", line)
  sub(/\|[ \t]*$/, "", line)
  n = split(line, arr, "|")
  for (i = 1; i <= n; i++) {
    gsub(/\003/, "|", arr[i])
    sub(/^[ \t]+/, "", arr[i])
    sub(/[ \t]+$/, "", arr[i])
  }
  return n
}

BEGIN {
  print ".\\\" Generated from docs/cli.md by mk/md2man.awk; edit docs/cli.md instead."
  print ".TH PCIE\\-TUNE 1 \"\" \"nccl\\-pcie\\-tuner " version "\" \"User Commands\""
  print ".SH NAME"
  print "pcie\\-tune \\- measure, import, show and check NCCL tuner profiles for PCIe GPU boxes"
  print ".SH SYNOPSIS"
  print ".B pcie\\-tune"
  print ".I command"
  print "[\\fIoptions\\fR]"
  print ".br"
  print ".B pcie\\-tune"
  print "\\fB\\-\\-help\\fR | \\fIcommand\\fR \\fB\\-\\-help\\fR"
  in_code = 0; in_para = 0; in_table = 0; first = 1
}

/^```/ {
  if (in_code) { print ".fi"; print ".RE"; in_code = 0; in_para = 0 }
  else { print ".PP"; print ".RS 2"; print ".nf"; in_code = 1 }
  next
}
in_code {
  line = esc($0)
  if (line ~ /^[.']/) line = "\\&" line
  print line
  next
}
/^\|/ {
  n = cells($0, c)
  if ($0 ~ /^\|[-:| \t]+\|?[ \t]*$/) next       # the separator row
  if (!in_table) { in_table = 1; in_para = 0; next } # the header row
  print ".TP"
  print inline(c[1])
  rest = ""
  for (i = 2; i <= n; i++) if (c[i] != "") rest = rest (rest == "" ? "" : " \\(em ") c[i]
  print inline(rest)
  next
}
{ in_table = 0 }
/^# / {
  if (first) { print ".SH DESCRIPTION"; first = 0; in_para = 1; next }
}
/^## / {
  t = substr($0, 4)
  print ".SH " toupper(inline(t))
  in_para = 1
  next
}
/^### / { print ".SS " inline(substr($0, 5)); in_para = 1; next }
/^[ \t]*$/ { in_para = 0; next }
/^- / { print ".IP \\(bu 2"; print inline(substr($0, 3)); in_para = 1; next }
/^[0-9]+\. / {
  k = index($0, " ")
  print ".IP " substr($0, 1, k - 1) " 4"
  print inline(substr($0, k + 1))
  in_para = 1
  next
}
{
  line = $0
  sub(/^[ \t]+/, "", line)
  para()
  print inline(line)
}
END {
  if (in_code) { print ".fi"; print ".RE" }
  print ".SH SEE ALSO"
  print "The project's README.md and docs/ (installed in /usr/share/doc/nccl\\-pcie\\-tuner or"
  print "PREFIX/share/doc/nccl\\-pcie\\-tuner): profile\\-format.md, decisions.md, cli\\-import.md, sim.md, gpu.md."
}
