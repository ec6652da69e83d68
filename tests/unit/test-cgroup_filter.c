// SPDX-License-Identifier: MIT
/*
 * Unit tests of sp_cgroup_filter_consider() and sp_cgroup_filter_made()
 * (lib/record/cgroup_filter.c): which cgroups made while recording -a
 * --cgroup/--container follows, on a directory tree standing for the
 * cgroup v2 mount (Podman's cgroupfs layout) and a root with Podman's
 * containers.json for the names; and a cgroup told made before its path
 * can be read by its id.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_filter.h"
#include "record/bpf_cgnew.h"
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

/* The ids a test's cgroups have, and whether their paths read yet. */
static struct {
	uint64_t id;
	const char *path;
	bool readable;
	unsigned int asked;
} ids[3];

static int fake_path_by_id(uint64_t id, char *buf, size_t size)
{
	unsigned int i;

	for (i = 0; i < 3; i++)
		if (ids[i].id == id) {
			ids[i].asked++;
			if (!ids[i].readable)
				return -1;
			snprintf(buf, size, "%s", ids[i].path);
			return 0;
		}
	return -1;
}

/* The kernel tells a mkdir before the directory can be found by its id:
 * such a cgroup is asked for again at the next passes, followed once it
 * reads; one removed meanwhile, or never readable within the wait, is
 * dropped (and counted), and asked for no more. */
static void test_made_before_readable(void)
{
	const uint64_t s = 1000000000ull;
	struct sp_cgwatch_ev ev[SP_CGROUP_FILTER_UNREAD + 2] = {
		{ .id = 101 }, { .id = 102 }, { .id = 103 },
	};
	struct sp_cgroup_filter f;

	filter(&f);
	f.path_by_id = fake_path_by_id;
	f.cgroups[f.ncgroups++] = "/late.slice";
	f.cgroups[f.ncgroups++] = "/gone.slice";
	f.cgroups[f.ncgroups++] = "/never.slice";
	mk("/late.slice");
	ids[0] = (typeof(ids[0])){ 101, "/late.slice", false, 0 };
	ids[1] = (typeof(ids[1])){ 102, "/gone.slice", false, 0 };
	ids[2] = (typeof(ids[2])){ 103, "/never.slice", false, 0 };
	CHECK_EQ_U(sp_cgroup_filter_told(&f, ev, 3, 10 * s), 0);
	CHECK_EQ_U(f.n, 0);
	CHECK_EQ_U(f.nunread, 3);
	/* the next pass, its path visible now: followed */
	ids[0].readable = true;
	CHECK_EQ_U(sp_cgroup_filter_told(&f, NULL, 0, 10 * s + s / 10), 1);
	CHECK_EQ_U(f.n, 1);
	CHECK_STR(f.path[0], "/late.slice");
	CHECK_EQ_U(f.nunread, 2);
	/* removed: no longer asked for */
	ev[0] = (struct sp_cgwatch_ev){ .id = 102, .gone = true };
	sp_cgroup_filter_told(&f, ev, 1, 10 * s + s / 5);
	CHECK_EQ_U(f.nunread, 1);
	CHECK_EQ_U(f.unread[0].id, 103);
	CHECK_EQ_U(ids[1].asked, 3);	/* at its mkdir, and at two passes */
	/* within the wait, still asked for; past it, dropped and counted */
	sp_cgroup_filter_told(&f, NULL, 0, 10 * s + SP_CGROUP_FILTER_UNREAD_NS - 1);
	CHECK_EQ_U(f.nunread, 1);
	CHECK_EQ_U(f.nunread_dropped, 0);
	sp_cgroup_filter_told(&f, NULL, 0, 10 * s + SP_CGROUP_FILTER_UNREAD_NS);
	CHECK_EQ_U(f.nunread, 0);
	CHECK_EQ_U(f.nunread_dropped, 1);
	CHECK_EQ_U(f.n, 1);
	/* more waiting than there is room for: the rest counted at once */
	for (unsigned int i = 0; i < SP_CGROUP_FILTER_UNREAD + 2; i++)
		ev[i] = (struct sp_cgwatch_ev){ .id = 200 + i };
	sp_cgroup_filter_told(&f, ev, SP_CGROUP_FILTER_UNREAD + 2, 20 * s);
	CHECK_EQ_U(f.nunread, SP_CGROUP_FILTER_UNREAD);
	CHECK_EQ_U(f.nunread_dropped, 3);
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
	TAP_RUN(test_made_before_readable);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	if (system(cmd))
		printf("# cannot remove %s\n", top);
	return TAP_DONE();
}
