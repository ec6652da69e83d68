#!/bin/sh
# SPDX-License-Identifier: MIT
# Turn a manual page written in docs/sp-*.md into troff for man(1). Handles
# what those pages use: '# name(1)', '## SECTION', paragraphs, ``` blocks,
# definition lists ('term' then ': text'), '* ' lists, `code`, **bold**.
set -eu
in=$1
name=$(basename "$in" .md)
awk -v name="$name" -v date="$(date -u -r "$in" +%Y-%m-%d 2>/dev/null || echo 2026-01-01)" '
function esc(s) {
	gsub(/\\/, "\\e", s)
	gsub(/^\./, "\\\\\\&.", s)
	gsub(/^'\''/, "\\\\\\&'\''", s)
	return s
}
function inline(s) {
	s = esc(s)
	while (match(s, /\*\*[^*]+\*\*/))
		s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" substr(s, RSTART + RLENGTH)
	while (match(s, /`[^`]+`/))
		s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
	while (match(s, /\[[^]]+\]\([^)]+\)/)) {
		t = substr(s, RSTART + 1, RLENGTH)
		sub(/\].*/, "", t)
		s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
	}
	return s
}
BEGIN { printf ".TH %s 1 \"%s\" \"StackPulse\" \"StackPulse Manual\"\n", toupper(name), date }
/^# / { next }
/^```/ { if (code) { print ".fi"; print ".RE"; code = 0 } else { print ".PP"; print ".RS 4"; print ".nf"; code = 1 }; next }
code { print esc($0); next }
/^## / { sub(/^## /, ""); print ".SH " toupper($0); next }
/^: / { sub(/^: /, ""); print inline($0); next }
/^  / && deflist { sub(/^ +/, ""); print inline($0); next }
/^\* / { sub(/^\* /, ""); print ".IP \\(bu 2"; print inline($0); next }
/^$/ { deflist = 0; pending = 1; next }
{
	if (pending) {
		getline nextline
		if (nextline ~ /^: /) {
			print ".TP"; print inline($0); sub(/^: /, "", nextline); print inline(nextline)
			deflist = 1; pending = 0; next
		}
		print ".PP"; print inline($0)
		if (nextline != "") print inline(nextline); else pending = 1
		if (nextline != "") pending = 0
		next
	}
	print inline($0)
}
' "$in"
