// SPDX-License-Identifier: MIT
/*
 * fstarts.c - function starts from .eh_frame_hdr (fstarts.h).
 *
 * The section: version (1), the encodings of eh_frame_ptr, fde_count and
 * the table, then eh_frame_ptr, fde_count and fde_count pairs (initial
 * location, FDE address). Linkers write eh_frame_ptr pc-relative sdata4
 * (0x1b), fde_count udata4 (0x03) and the table datarel sdata4 (0x3b:
 * relative to the section's start); anything else is not read.
 */
#include <stdlib.h>
#include <string.h>

#include "elf/elffile.h"
#include "elf/fstarts.h"

#define ENC_PCREL_SDATA4	0x1b
#define ENC_UDATA4		0x03
#define ENC_DATAREL_SDATA4	0x3b

static uint32_t u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int sp_fstarts_parse(const uint8_t *b, size_t len, uint64_t addr, struct sp_fstarts *f)
{
	uint64_t n, i;

	memset(f, 0, sizeof(*f));
	if (len < 12 || b[0] != 1 || b[1] != ENC_PCREL_SDATA4 || b[2] != ENC_UDATA4 ||
	    b[3] != ENC_DATAREL_SDATA4)
		return -1;
	n = u32(b + 8);
	if (!n || n > SP_FSTARTS_MAX || n > (len - 12) / 8)
		return -1;
	f->at = malloc(n * sizeof(*f->at));
	if (!f->at)
		return -1;
	for (i = 0; i < n; i++) {
		f->at[i] = addr + (uint64_t)(int64_t)(int32_t)u32(b + 12 + 8 * i);
		if (i && f->at[i] < f->at[i - 1]) {	/* not a search table */
			sp_fstarts_release(f);
			return -1;
		}
	}
	f->n = n;
	return 0;
}

int sp_fstarts_read(Elf *elf, struct sp_fstarts *f)
{
	Elf_Scn *scn;
	Elf_Data *d;
	GElf_Shdr sh;

	memset(f, 0, sizeof(*f));
	scn = sp_elf_section(elf, ".eh_frame_hdr", &sh);
	/* no more than the table kept can fill (the file's owner says its size) */
	if (!scn || sh.sh_type != SHT_PROGBITS ||
	    !(d = sp_elf_data_max(scn, &sh, 12 + 8 * (uint64_t)SP_FSTARTS_MAX)) || !d->d_buf)
		return -1;
	return sp_fstarts_parse(d->d_buf, d->d_size, sh.sh_addr, f);
}

int sp_fstarts_find(const struct sp_fstarts *f, uint64_t addr, uint64_t *end)
{
	size_t lo = 0, hi = f->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (f->at[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == f->n || f->at[lo] != addr)
		return 0;
	/* the next function that starts elsewhere (two FDEs may share one);
	 * the last one's end is not in the table */
	while (lo < f->n && f->at[lo] == addr)
		lo++;
	if (lo == f->n)
		return 0;
	*end = f->at[lo];
	return 1;
}

void sp_fstarts_release(struct sp_fstarts *f)
{
	free(f->at);
	memset(f, 0, sizeof(*f));
}
