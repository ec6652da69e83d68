// SPDX-License-Identifier: MIT
/*
 * A main() for the fuzz targets where clang's libFuzzer is not there: runs
 * LLVMFuzzerTestOneInput once over each file named, and over each file of
 * each directory named (a corpus), as `fuzz-x -runs=0 DIR` does. Built with
 * the C compiler and ASan + UBSan (make fuzz-standalone), so that the
 * decoders' corpora are checked on a machine without clang.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t n;
	FILE *f = fopen(path, "rb");

	if (!f || fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "standalone: cannot read '%s'\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!buf || n != (size_t)st.st_size) {
		free(buf);
		fprintf(stderr, "standalone: cannot read '%s'\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long runs = 0;
	int i, err = 0;

	for (i = 1; i < argc; i++) {
		struct dirent *e;
		char path[4096];
		DIR *d = opendir(argv[i]);

		if (!d) {
			err |= run_file(argv[i]);
			runs++;
			continue;
		}
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			err |= run_file(path);
			runs++;
		}
		closedir(d);
	}
	fprintf(stderr, "Done %lu runs\n", runs);
	return err ? 1 : 0;
}
