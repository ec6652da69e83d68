// SPDX-License-Identifier: MIT
/*
 * Unit tests of sp_cgroup_filter_consider() (lib/record/cgroup_filter.c):
 * which cgroups made while recording -a --cgroup/--container follows, on a
 * directory tree standing for the cgroup v2 mount (Podman's cgroupfs
 * layout) and a root with Podman's containers.json for the names.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_filter.h"
#include "tap.h"

#define ID1 "0b0017f87b82fdb53366338324ad668aa98b1a5aa6e67b9821c9bbdb4940c752"
#define ID2 "326ecfd795616e09dcb62ba459372a0781999b65694a5bc32e2b81836798fa0b"
#define ID3 "9111824295dfea5dfba16b6efffe79d61c39f162d0d4d4632ebfe853b88975d4"
#define ID4 "0b00aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define C(id) "/libpod_parent/libpod-" id

static char top[] = "/tmp/sp-test-cgf-XXXXXX";
static char mnt[600], names[600];

static void mk(const char *rel)
{
	char p[800];

	snprintf(p, sizeof(p), "%s%s", mnt, rel);
	CHECK(mkdir(p, 0755) == 0);
}

static void put_names(const char *json)
{
	char p[800];
	FILE *f;

	snprintf(p, sizeof(p), "%s/var/lib/containers/storage/overlay-containers/containers.json",
		 names);
	f = fopen(p, "w");
	fputs(json, f);
	fclose(f);
}

static void filter(struct sp_cgroup_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->names_root = names;
}

static void done(struct sp_cgroup_filter *f)
{
	close(f->mfd);
	f->nwaiting = 0;
	sp_cgroup_filter_release(f);
}

/* A name: the first container of that name, again when it is started
 * again (a new cgroup at the same path), and another one given the name
 * later (podman run --replace); not a container of another name. */
static void test_consider_name(void)
{
	struct sp_cgroup_filter f;
	char p[800], q[800];

	filter(&f);
	f.containers[f.ncontainers++] = "web";
	f.container_waits[0] = true;
	put_names("[{\"id\":\"" ID1 "\",\"names\":[\"web\"]},{\"id\":\"" ID2 "\",\"names\":[\"db\"]}]");
	mk(C(ID2));
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID2)), 0);
	CHECK_EQ_U(f.n, 0);
	CHECK_EQ_U(f.nseen, 1);		/* remembered: not asked again */
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID2)), 0);
	CHECK_EQ_U(f.nseen, 1);
	mk(C(ID1));
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID1)), 1);
	CHECK_EQ_U(f.n, 1);
	CHECK_STR(f.path[0], C(ID1));
	CHECK(!f.container_waits[0]);
	/* a cgroup made below it: followed already */
	mk(C(ID1) "/container");
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID1) "/container"), 0);
	CHECK_EQ_U(f.n, 1);
	/* started again: the old directory gone, a new one at its path */
	snprintf(p, sizeof(p), "%s" C(ID1), mnt);
	snprintf(q, sizeof(q), "%s/gone", mnt);
	CHECK(rename(p, q) == 0);	/* kept: its inode is not handed out again */
	mk(C(ID1));
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID1)), 1);
	CHECK_EQ_U(f.n, 2);
	CHECK(f.id[0] != f.id[1]);
	/* the name given to another container */
	put_names("[{\"id\":\"" ID3 "\",\"names\":[\"web\"]},{\"id\":\"" ID2 "\",\"names\":[\"db\"]}]");
	mk(C(ID3));
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID3)), 1);
	CHECK_EQ_U(f.n, 3);
	CHECK_STR(f.path[2], C(ID3));
	done(&f);
}

/* An id prefix, a --cgroup path, and cgroups that name no container. */
static void test_consider_id_and_path(void)
{
	struct sp_cgroup_filter f;

	filter(&f);
	f.containers[f.ncontainers++] = "9111";
	f.cgroups[f.ncgroups++] = "/batch.slice";
	f.cgroup_waits[0] = true;
	put_names("[]");
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID3)), 1);
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID1)), 0);	/* another id */
	mk("/batch.slice");
	mk("/other.slice");
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, "/other.slice"), 0);
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, "/batch.slice"), 1);
	CHECK(!f.cgroup_waits[0]);
	CHECK_EQ_U(f.n, 2);
	CHECK_STR(f.path[1], "/batch.slice");
	/* one that matches but is gone before it is opened: nothing */
	f.containers[0] = "0b00";
	CHECK_EQ_U(sp_cgroup_filter_consider(&f, C(ID4)), 0);
	CHECK_EQ_U(f.n, 2);
	done(&f);
}

int main(void)
{
	char cmd[1400];

	if (!mkdtemp(top))
		return 1;
	snprintf(mnt, sizeof(mnt), "%s/cg", top);
	snprintf(names, sizeof(names), "%s/root", top);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/libpod_parent %s/var/lib/containers/storage/"
		 "overlay-containers", mnt, names);
	if (system(cmd))
		return 1;
	if (geteuid() != 0) {
		/* the runtime's files must be root's */
		TAP_SKIP(test_consider_name, "not root");
	} else {
		TAP_RUN(test_consider_name);
	}
	TAP_RUN(test_consider_id_and_path);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		printf("# cannot remove %s\n", top);
	return TAP_DONE();
}
