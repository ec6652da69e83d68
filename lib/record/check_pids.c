// SPDX-License-Identifier: MIT
/* What --check says of the -p processes (check_pids.h). */
#include <errno.h>
#include <string.h>

#include "check_pids.h"
#include "escape.h"
#include "proc_pin.h"
#include "procfs.h"
#include "sp.h"

int sp_check_pids(const uint32_t *pids, size_t n, FILE *out)
{
	char why[128], comm[64], exe[4096], ecomm[256], eexe[1024];
	struct sp_proc_pin pin;
	int status = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (sp_proc_pin_open(&pin, pids[i])) {
			sp_pidfd_failure(pids[i], errno, why, sizeof(why));
			sp_error("pid %u: %s", pids[i], why);
			status = -1;
			continue;
		}
		if (sp_procfs_comm(pids[i], pids[i], comm, sizeof(comm)))
			comm[0] = 0;
		if (sp_procfs_exe(pids[i], exe, sizeof(exe)))
			snprintf(exe, sizeof(exe), "executable not readable (a kernel thread has none)");
		sp_esc_text(ecomm, sizeof(ecomm), comm, strlen(comm), 0);
		sp_esc_text(eexe, sizeof(eexe), exe, strlen(exe), 0);
		fprintf(out, "-p %u (%s, %s): can be attached to; what a recording gets of it "
			"(interpreted frames, spans) is not tried here: record it for a second "
			"to see (sp-record -v -p %u -d 1 -o /dev/null)\n", pids[i], ecomm, eexe,
			pids[i]);
		sp_proc_pin_close(&pin);
	}
	return status;
}
