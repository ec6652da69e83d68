// SPDX-License-Identifier: MIT
/* Unit tests of the hash tables (lib/base/hashmap.c). */
#include <stdint.h>
#include <string.h>

#include "hashmap.h"
#include "tap.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Random puts, replaces and deletes on a small key space, checked against a
 * plain array: exercises deletion inside runs, wrapping runs and resizing. */
static void test_hashmap_u64map_against_array(void)
{
	enum { KEYS = 4096, OPS = 400000 };
	static uint64_t val[KEYS];
	static bool have[KEYS];
	struct sp_u64map m = SP_U64MAP_INIT;
	size_t n = 0, i, iter, seen;
	uint64_t k, v, *p;
	bool ok = true;

	CHECK(sp_u64map_get(&m, 1) == NULL);
	CHECK(!sp_u64map_del(&m, 1));
	for (i = 0; i < OPS; i++) {
		uint64_t r = next_rand();
		/* Keys that collide in the low bits, and 0 and UINT64_MAX. */
		uint64_t idx = r % KEYS;
		uint64_t key = idx == 0 ? 0 : idx == 1 ? UINT64_MAX : idx << 20;

		if ((r >> 32) % 3) {
			p = sp_u64map_put(&m, key, r);
			if (!p || *p != r)
				ok = false;
			n += !have[idx];
			have[idx] = true;
			val[idx] = r;
		} else {
			if (sp_u64map_del(&m, key) != have[idx])
				ok = false;
			n -= have[idx];
			have[idx] = false;
		}
		if (m.n != n)
			ok = false;
	}
	CHECK(ok);
	for (i = 0; i < KEYS; i++) {
		uint64_t key = i == 0 ? 0 : i == 1 ? UINT64_MAX : (uint64_t)i << 20;

		p = sp_u64map_get(&m, key);
		if (have[i] ? !p || *p != val[i] : p != NULL)
			ok = false;
	}
	CHECK(ok);
	/* Iteration sees every key once. */
	seen = 0;
	for (iter = 0; sp_u64map_next(&m, &iter, &k, &v); seen++) {
		size_t idx = k == 0 ? 0 : k == UINT64_MAX ? 1 : k >> 20;

		if (idx >= KEYS || !have[idx] || val[idx] != v)
			ok = false;
	}
	CHECK(ok);
	CHECK_EQ_U(seen, n);
	/* The table does not grow without bound under churn. */
	CHECK(m.cap <= 4 * KEYS * 2);
	sp_u64map_release(&m);
	CHECK(m.cap == 0 && m.n == 0);
}

static void test_hashmap_u64map_many(void)
{
	struct sp_u64map m = SP_U64MAP_INIT;
	uint64_t i;
	bool ok = true;

	for (i = 0; i < 200000; i++)
		sp_u64map_put(&m, i * 4096, i);
	CHECK_EQ_U(m.n, 200000);
	for (i = 0; i < 200000; i += 2)
		if (!sp_u64map_del(&m, i * 4096))
			ok = false;
	for (i = 0; i < 200000; i++) {
		uint64_t *p = sp_u64map_get(&m, i * 4096);

		if (i % 2 ? !p || *p != i : p != NULL)
			ok = false;
	}
	CHECK(ok);
	CHECK_EQ_U(m.n, 100000);
	sp_u64map_release(&m);
}

/*
 * The order sp_u64map_next() walks a table in follows from the sequence of
 * puts and deletes alone, by the rules hashmap.h states; sp-correlate's
 * output depends on it. The digest of the walks below is the one the
 * correlator's own table gave before it used this one.
 */
static void test_hashmap_u64map_layout(void)
{
	struct sp_u64map m = SP_U64MAP_INIT;
	uint64_t digest = 0, i, k, v;
	size_t it;

	rng = 88172645463325252ull;
	for (i = 0; i < 100000; i++) {
		uint64_t r = next_rand(), key = (r >> 8) % 3000;

		if ((r >> 40) % 4)
			sp_u64map_put(&m, key, i + 1);
		else
			sp_u64map_del(&m, key);
		if (i % 997 == 0)
			for (it = 0; sp_u64map_next(&m, &it, &k, &v);)
				digest = sp_hash_mix(digest, k ^ (v << 32));
	}
	CHECK_EQ_U(m.n, 2283);
	CHECK_EQ_U(m.cap, 4096);
	CHECK_EQ_U(digest, 0xdbbe943f6dd46257ull);
	sp_u64map_release(&m);
}

struct objs {
	uint64_t key[70000];
	uint64_t (*hash)(uint64_t);
};

static uint64_t good_hash(uint64_t k)
{
	return sp_hash_u64(k);
}

static uint64_t bad_hash(uint64_t k)
{
	return k % 7;	/* long collision chains */
}

static bool obj_eq(void *ctx, uint32_t id, const void *key)
{
	return ((struct objs *)ctx)->key[id] == *(const uint64_t *)key;
}

static void idset_run(struct objs *o, unsigned int n)
{
	struct sp_idset s = SP_IDSET_INIT;
	uint64_t k = 0;
	unsigned int i;
	bool ok = true;

	CHECK_EQ_U(sp_idset_find(&s, 1, &k, obj_eq, o), 0);
	for (i = 1; i <= n; i++) {
		o->key[i] = next_rand();
		sp_idset_add(&s, o->hash(o->key[i]), i);
	}
	CHECK_EQ_U(s.n, n);
	for (i = 1; i <= n; i++)
		if (sp_idset_find(&s, o->hash(o->key[i]), &o->key[i], obj_eq, o) != i)
			ok = false;
	CHECK(ok);
	for (i = 0; i < 1000; i++) {
		k = next_rand();
		if (sp_idset_find(&s, o->hash(k), &k, obj_eq, o))
			ok = false;
	}
	CHECK(ok);
	sp_idset_release(&s);
}

static void test_hashmap_idset(void)
{
	static struct objs o;

	o.hash = good_hash;
	idset_run(&o, 65536);
	o.hash = bad_hash;
	idset_run(&o, 2000);
}

/*
 * Random adds and deletes of ids 1..N, checked against a plain array: a
 * deleted id is not found, every other one is, through runs that wrap and
 * long collision chains; a deleted id comes back under a new key.
 */
static void idset_churn(struct objs *o, unsigned int n, unsigned int ops)
{
	static bool in[70000];
	struct sp_idset s = SP_IDSET_INIT;
	unsigned int i, id, count = 0;
	bool ok = true;
	uint64_t k;

	memset(in, 0, sizeof(in));
	CHECK(!sp_idset_del(&s, 1, 1));
	for (i = 0; i < ops; i++) {
		uint64_t r = next_rand();

		id = 1 + (r >> 8) % n;
		if (!in[id]) {
			o->key[id] = next_rand();	/* a new key for the id */
			sp_idset_add(&s, o->hash(o->key[id]), id);
			in[id] = true;
			count++;
		} else if ((r >> 40) % 2) {
			if (!sp_idset_del(&s, o->hash(o->key[id]), id))
				ok = false;
			if (sp_idset_del(&s, o->hash(o->key[id]), id))
				ok = false;	/* gone already */
			in[id] = false;
			count--;
		}
		if (s.n != count)
			ok = false;
	}
	CHECK(ok);
	for (id = 1; id <= n; id++) {
		k = o->key[id];
		if (sp_idset_find(&s, o->hash(k), &k, obj_eq, o) != (in[id] ? id : 0))
			ok = false;
	}
	CHECK(ok);
	/* the table does not grow under churn: it holds at most n ids */
	CHECK(s.cap <= 4 * (size_t)n);
	sp_idset_release(&s);
	CHECK(s.cap == 0 && s.n == 0);
}

static void test_hashmap_idset_del(void)
{
	static struct objs o;

	o.hash = good_hash;
	idset_churn(&o, 60000, 400000);
	idset_churn(&o, 50, 100000);
	o.hash = bad_hash;
	idset_churn(&o, 1000, 100000);
}

static void test_hashmap_hash_bytes(void)
{
	char a[64], b[64];
	unsigned int n;
	bool ok = true;

	memset(a, 'x', sizeof(a));
	memcpy(b, a, sizeof(b));
	for (n = 0; n < sizeof(a); n++) {
		if (sp_hash_bytes(a, n) != sp_hash_bytes(b, n))
			ok = false;
		/* The length is part of the hash; so is every byte. */
		if (n && sp_hash_bytes(a, n) == sp_hash_bytes(a, n - 1))
			ok = false;
		if (n) {
			b[n - 1] ^= 1;
			if (sp_hash_bytes(a, n) == sp_hash_bytes(b, n))
				ok = false;
			b[n - 1] ^= 1;
		}
	}
	CHECK(ok);
	CHECK(sp_hash_u64(1) != sp_hash_u64(2));
	CHECK(sp_hash_mix(1, 2) != sp_hash_mix(2, 1));
}

int main(void)
{
	TAP_RUN(test_hashmap_u64map_against_array);
	TAP_RUN(test_hashmap_u64map_many);
	TAP_RUN(test_hashmap_u64map_layout);
	TAP_RUN(test_hashmap_idset);
	TAP_RUN(test_hashmap_idset_del);
	TAP_RUN(test_hashmap_hash_bytes);
	return TAP_DONE();
}
