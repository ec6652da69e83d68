// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/record/container_name.c: a container's name from
 * Podman's and Docker's own files, laid out under a directory standing for
 * "/" as the runtimes write them (Podman 4.3's containers.json and
 * Docker's config.v2.json, cut to the fields read), and what is refused.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "container_name.h"
#include "tap.h"

#define ID1 "0b0017f87b82fdb53366338324ad668aa98b1a5aa6e67b9821c9bbdb4940c752"
#define ID2 "326ecfd795616e09dcb62ba459372a0781999b65694a5bc32e2b81836798fa0b"
#define ID3 "9111824295dfea5dfba16b6efffe79d61c39f162d0d4d4632ebfe853b88975d4"

static char root[] = "/tmp/sp-test-cname-XXXXXX";

static void put(const char *rel, const char *text)
{
	char p[512], *s;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(p, 0700);
		*s = '/';
	}
	f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
}

static void test_podman_names(void)
{
	put("var/lib/containers/storage/overlay-containers/containers.json",
	    "[{\"id\":\"" ID1 "\",\"names\":[\"web\",\"web-alias\"],\"image\":\"f6d3\","
	    "\"layer\":\"ab\",\"metadata\":\"\",\"created\":\"2026-12-04T12:36:00Z\"},"
	    "{\"id\":\"" ID2 "\",\"names\":[\"db\"]}]");
	CHECK(1 == sp_container_named(root, ID1, "web"));
	CHECK(1 == sp_container_named(root, ID1, "web-alias"));
	CHECK(1 == sp_container_named(root, ID2, "db"));
	CHECK_EQ_U(sp_container_named(root, ID1, "db"), 0);	/* another's name */
	CHECK_EQ_U(sp_container_named(root, ID3, "web"), -1);	/* not listed */
	CHECK_EQ_U(sp_container_named(root, ID1, "we"), 0);	/* a prefix is no name */
	CHECK_EQ_U(sp_container_named(root, ID1, ""), -1);
}

static void test_podman_vfs(void)
{
	put("var/lib/containers/storage/vfs-containers/containers.json",
	    "[{\"id\":\"" ID3 "\",\"names\":[\"cache\"]}]");
	CHECK(1 == sp_container_named(root, ID3, "cache"));
}

static void test_docker_name(void)
{
	put("var/lib/docker/containers/" ID2 "/config.v2.json",
	    "{\"ID\":\"" ID2 "\",\"Name\":\"/api\",\"State\":{\"Running\":true}}");
	CHECK(1 == sp_container_named(root, ID2, "api"));
	CHECK_EQ_U(sp_container_named(root, ID2, "/api"), 0);
	CHECK(1 != sp_container_named(root, ID1, "api"));
}

static void test_refused(void)
{
	char p[512], q[512];

	/* not an id: never part of a path */
	CHECK_EQ_U(sp_container_named(root, "../../../etc", "web"), -1);
	CHECK_EQ_U(sp_container_named(root, "0B0017F87B82FDB53366338324AD668AA98B1A5AA6E67B9821C9BBDB4940C752",
				  "web"), -1);
	/* malformed JSON, and a list that is no list */
	put("var/lib/containers/storage/overlay-containers/containers.json", "[{\"id\":");
	CHECK_EQ_U(sp_container_named(root, ID1, "web"), -1);
	put("var/lib/containers/storage/overlay-containers/containers.json",
	    "{\"id\":\"" ID1 "\",\"names\":[\"web\"]}");
	CHECK_EQ_U(sp_container_named(root, ID1, "web"), -1);
	/* a link is not followed, even to a good list */
	put("elsewhere.json", "[{\"id\":\"" ID1 "\",\"names\":[\"web\"]}]");
	snprintf(p, sizeof(p), "%s/var/lib/containers/storage/overlay-containers/containers.json",
		 root);
	snprintf(q, sizeof(q), "%s/elsewhere.json", root);
	unlink(p);
	CHECK(symlink(q, p) == 0);
	CHECK_EQ_U(sp_container_named(root, ID1, "web"), -1);
	/* the same list as a file: named */
	unlink(p);
	CHECK(rename(q, p) == 0);
	CHECK(1 == sp_container_named(root, ID1, "web"));
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(root))
		return 1;
	if (geteuid() != 0) {
		/* the files must be root's */
		TAP_SKIP(test_podman_names, "not root");
	} else {
		TAP_RUN(test_podman_names);
		TAP_RUN(test_podman_vfs);
		TAP_RUN(test_docker_name);
		TAP_RUN(test_refused);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		printf("# cannot remove %s\n", root);
	return TAP_DONE();
}
