// SPDX-License-Identifier: MIT
/* Telling folded stacks from records by their first bytes (folded_text.h). */
#include "folded_text.h"

bool sp_looks_folded(const unsigned char *buf, size_t n)
{
	size_t i, eol;

	/* a spool starts with its magic (0x93), JSON lines with '{' */
	if (!n || buf[0] == '{' || buf[0] == 0x93)
		return false;
	for (eol = 0; eol < n && buf[eol] != '\n'; eol++)
		;
	for (i = 0; i < n; i++)
		if (buf[i] == 0 || (buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\r' && buf[i] != '\t'))
			return false;
	while (eol && (buf[eol - 1] == '\r' || buf[eol - 1] == ' '))
		eol--;
	for (i = eol; i > 0 && buf[i - 1] >= '0' && buf[i - 1] <= '9'; i--)
		;
	return i < eol && i > 1 && buf[i - 1] == ' ';
}
