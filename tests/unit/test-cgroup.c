// SPDX-License-Identifier: MIT
/*
 * Unit tests of lib/base/cgroup.c on cgroup paths from real systems (each
 * case says where it was seen: the runtimes' own issue threads), on the
 * layouts the runtimes document where no real path was at hand, and on
 * names that only look like a container's.
 */
#include <string.h>

#include "cgroup.h"
#include "tap.h"

#define D1 "5b881011f3e7efdae20491f386f50d4eac7355296ffcb5146a2b4d3c936a9430"
#define D2 "2403ccfe427f1dc7b6120dccb9ac58c2f8456950380d587a9f33ea7f00dd303d"
#define D3 "b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26"
#define P1 "2521e906f0a0c758c3a7dc4fd68c197e32e96abb4b36807d0b0ede6d014a7c24"
#define PP "3206538f745dafcf8a9d41eb08cd2867031d2e12b79b195c10543a2078bba133"
#define C1 "2032491dcae31e6746f47daa0ac74564f2843a1bd847c5e6c4eb501ca132ac36"
#define C2 "0e768f8db752fcd648adb264498daa1d8f31562320e881d6a9ec593d24b1f779"
#define C3 "b16518f2aa1b484a2b9a47aff0901792f8c3c7e2b7a48be8b5adcff30e213458"
#define O1 "0ba8ac17e4e7a31fb82279503552fe94e64bab4745bf6fd2ff231e7c8ca8bed0"
#define OD "d6701ec289c56e4391acb11d07474b3139466857a305490575508a8b7a9fcf22"
#define K1 "d28e0087cf8f3f0429f755d60b0de415b20fcf76736ded7bab6e30e7b739ee36"

static struct sp_cgroup_owner o;

static int owner(const char *path)
{
	return sp_cgroup_owner(path, strlen(path), &o);
}

static void expect(const char *path, const char *runtime, const char *id, const char *pod)
{
	CHECK_EQ_U(owner(path), 1);
	CHECK_STR(o.runtime, runtime);
	CHECK_STR(o.id, id);
	CHECK_STR(o.pod, pod);
}

static void none(const char *path)
{
	CHECK_EQ_U(owner(path), 0);
	CHECK(o.runtime == NULL && !o.id[0] && !o.pod[0]);
}

static void test_cgroup_docker(void)
{
	/* systemd driver: google/cadvisor#822 */
	expect("/system.slice/docker-" D1 ".scope", "docker", D1, "");
	/* cgroupfs driver: ctrsploit/ctrsploit#280 */
	expect("/docker/" D2, "docker", D2, "");
	/* nested under init.scope on a v1 host: containerd/containerd#285 */
	expect("/init.scope/system.slice/docker-" D3 ".scope", "docker", D3, "");
	/* rootless Docker: the layout its documentation gives (no real path) */
	expect("/user.slice/user-1000.slice/user@1000.service/docker-" D1 ".scope",
	       "docker", D1, "");
}

static void test_cgroup_podman(void)
{
	/* root: podman-container-tools/podman#10602 */
	expect("/machine.slice/libpod-" P1 ".scope", "podman", P1, "");
	/* the same container's inner init.scope (v1 name=systemd line there) */
	expect("/machine.slice/libpod-" P1 ".scope/init.scope", "podman", P1, "");
	/* a systemd in the container: its services under the container's scope */
	expect("/machine.slice/libpod-" P1 ".scope/container/system.slice/nginx.service",
	       "podman", P1, "");
	/* rootless: the user-slice layout (no real container path at hand) */
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" P1 ".scope",
	       "podman", P1, "");
	/* cgroupfs manager */
	expect("/libpod_parent/libpod-" P1, "podman", P1, "");
	/* a rootless pod's slice: alumet-dev/alumet#463 */
	expect("/user.slice/user-1049.slice/user@1049.service/user.slice/user-libpod_pod_" PP
	       ".slice", "podman", "", PP);
	expect("/machine.slice/machine-libpod_pod_" PP ".slice/libpod-" P1 ".scope",
	       "podman", P1, PP);
	/* conmon and podman's own processes are not in a container:
	 * containers/crun#376, alumet-dev/alumet#463 */
	none("/machine.slice/libpod-conmon-" P1 ".scope");
	none("/user.slice/user-1000.slice/user@1000.service/user.slice/podman-6696.scope");
	none("/user.slice/user-1049.slice/user@1049.service/user.slice/podman-pause-23c87985.scope");
}

static void test_cgroup_kubernetes(void)
{
	/* containerd, systemd driver: netdata/netdata#4868 */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod55c6c714_b240_4dec_"
	       "9a45_57b61696ab6e.slice/cri-containerd-" C1 ".scope",
	       "containerd", C1, "55c6c714-b240-4dec-9a45-57b61696ab6e");
	/* a static pod: its uid is a 32-digit hash (same thread) */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8daa50c3a64c9ff6"
	       "0bb9eab7b44b56fd.slice/cri-containerd-" C3 ".scope",
	       "containerd", C3, "8daa50c3a64c9ff60bb9eab7b44b56fd");
	/* containerd outside Kubernetes: containerd/cri#290 */
	expect("/system.slice/system-getty.slice/cri-containerd-" C2 ".scope",
	       "containerd", C2, "");
	/* CRI-O in a node that is itself a Docker container (minikube):
	 * kubernetes/minikube#11280 -- the inner container wins */
	expect("/docker/" OD "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-"
	       "pod2ca4a155_3599_498d_bb9d_4446693fa3ea.slice/crio-" O1 ".scope",
	       "crio", O1, "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	/* guaranteed QoS: no class in the slice name (kubelet's layout) */
	expect("/kubepods.slice/kubepods-pod55c6c714_b240_4dec_9a45_57b61696ab6e.slice/crio-"
	       O1 ".scope", "crio", O1, "55c6c714-b240-4dec-9a45-57b61696ab6e");
	/* cgroupfs driver, runtime not named: moby/moby#34584 */
	expect("/kubepods/besteffort/pod9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3/" K1,
	       "kubernetes", K1, "9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3");
	/* the pod's own slice */
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod2ca4a155_3599_"
	       "498d_bb9d_4446693fa3ea.slice", "kubernetes", "",
	       "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	/* a QoS slice is not a pod; crio-conmon is not a container (its pod is) */
	none("/kubepods.slice/kubepods-besteffort.slice");
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod2ca4a155_3599_"
	       "498d_bb9d_4446693fa3ea.slice/crio-conmon-" O1 ".scope", "kubernetes", "",
	       "2ca4a155-3599-498d-bb9d-4446693fa3ea");
	/* a pod uid of the wrong form */
	none("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podzz.slice");
	/* pod<uid> means a pod only under kubepods */
	none("/pod9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3/" K1);
}

static void test_cgroup_systemd(void)
{
	/* ctrsploit/ctrsploit#280, liske/needrestart#165 */
	expect("/system.slice/containerd.service", "systemd", "containerd.service", "");
	expect("/system.slice/docker.service", "systemd", "docker.service", "");
	expect("/system.slice/nginx.service", "systemd", "nginx.service", "");
	expect("/system.slice/system-getty.slice/getty@tty1.service", "systemd",
	       "getty@tty1.service", "");
	expect("/user.slice/user-1049.slice/user@1049.service/app.slice/dbus-broker.service",
	       "systemd", "dbus-broker.service", "");
	/* sessions, slices and the root are no service */
	none("/user.slice/user-1000.slice/session-3.scope");
	none("/init.scope");
	none("/");
	none("");
	none("/system.slice");
	none("/.service");
	none("/system.slice/a b.service");
}

static void test_cgroup_lookalikes(void)
{
	/* wrong length, upper case, wrong suffix, other prefix */
	none("/system.slice/docker-" D1 "0.scope");
	none("/system.slice/docker-5B881011f3e7efdae20491f386f50d4eac7355296ffcb5146a2b4d3c936a9430.scope");
	none("/system.slice/docker-" D1 ".slice");
	none("/system.slice/rkt-" D1 ".scope");
	none("/" D1);		/* a bare id needs a runtime's parent */
	none("/notdocker/" D1);
	/* a path cut inside its id, and one not NUL-terminated */
	CHECK_EQ_U(sp_cgroup_owner("/docker/" D2, 20, &o), 0);
	CHECK_EQ_U(sp_cgroup_owner("/docker/" D2 "/xyz", 8 + 64, &o), 1);
	CHECK_STR(o.id, D2);
	/* slashes doubled or trailing */
	expect("//system.slice//docker-" D1 ".scope/", "docker", D1, "");
}

static void test_cgroup_deep(void)
{
	char path[8192] = "";
	int i;

	/* deeper than the parts kept: the last ones are read */
	for (i = 0; i < 500; i++)
		strcat(path, "/a.slice");
	strcat(path, "/docker-" D1 ".scope");
	expect(path, "docker", D1, "");
}

int main(void)
{
	TAP_RUN(test_cgroup_docker);
	TAP_RUN(test_cgroup_podman);
	TAP_RUN(test_cgroup_kubernetes);
	TAP_RUN(test_cgroup_systemd);
	TAP_RUN(test_cgroup_lookalikes);
	TAP_RUN(test_cgroup_deep);
	return TAP_DONE();
}
