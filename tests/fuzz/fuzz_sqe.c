/* SPDX-License-Identifier: MIT */
/*
 * fuzz_sqe: submission descriptors are the engine's largest untrusted input.
 * Two endpoints of two clients, joined by two connections, with exactly sized
 * heap regions so that AddressSanitizer sees any access one byte out of
 * bounds. The input is a 4-byte header (ring corruption choice) followed by
 * records of one selector byte and one 64-byte SQE; the selector picks the
 * endpoint and sprinkles polls, CQ drains and control calls (close, region
 * removal) between descriptors. Unless a ring was corrupted on purpose, every
 * consumed descriptor must end with exactly one completion.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/ring.h"

#define NEP   2
#define NMR   4
#define SQ_N  16
#define CQ_N  16
#define CONNS 2

struct cli {
	void *region;
	size_t len;
	struct uccl_shm_hdr hdr;
	struct ring_side sq, cq;
	uint64_t reaped;
};

static const struct {
	uint32_t client, id;
	uint64_t rkey, len;
} mr_defs[NMR] = {
	{ 1, 1, 0x11, 64 },
	{ 1, 2, 0x12, 7 },
	{ 2, 1, 0x21, 100 },
	{ 2, 3, 0x23, 1 },
};

static int fz_copy(void *arg, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		   uint64_t src_off, uint64_t len)
{
	(void)arg;
	/* the engine promised checked ranges; ASan checks the promise */
	if (!mr_range_ok(dst, dst_off, len) || !mr_range_ok(src, src_off, len))
		abort();
	memmove((uint8_t *)dst->base + dst_off, (const uint8_t *)src->base + src_off, len);
	return 0;
}

static void fz_notify(void *arg, uint32_t ep_id)
{
	(void)arg;
	if (ep_id >= NEP)
		abort();
}

static const struct engine_mem_ops fz_mem = { .copy = fz_copy };

static void drain(struct cli *c)
{
	int n = ring_cons_avail(&c->cq);

	if (n < 0)
		return;   /* only after deliberate corruption */
	for (int i = 0; i < n; i++) {
		struct uccl_cqe cqe;

		memcpy(&cqe, ring_cons_slot(&c->cq, (uint32_t)i), sizeof(cqe));
		if (cqe.res > 0)
			abort();
	}
	ring_cons_release(&c->cq, (uint32_t)n);
	c->reaped += (uint64_t)n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engine_params ep = { .max_endpoints = NEP, .max_mrs = NMR + 1, .poll_batch = 4,
				    .mem = &fz_mem, .notify = fz_notify };
	struct cli cli[NEP] = { 0 };
	void *bufs[NMR] = { 0 };
	bool removed[NEP] = { false };
	struct engine *e;
	uint8_t hdr[4] = { 0 };
	bool corrupt = false;

	if (size >= sizeof(hdr)) {
		memcpy(hdr, data, sizeof(hdr));
		data += sizeof(hdr);
		size -= sizeof(hdr);
	}
	e = engine_new(&ep);
	if (!e)
		return 0;
	for (uint32_t i = 0; i < NEP; i++) {
		struct cli *c = &cli[i];
		struct engine_ep_params p;

		c->len = ring_region_layout(SQ_N, CQ_N, CONNS, &c->hdr);
		c->region = calloc(1, c->len);
		if (!c->region)
			goto out;
		ring_side_init(&c->sq, c->region, c->hdr.sq_ctl_off, c->hdr.sq_off, SQ_N, UCCL_SQE_SIZE);
		ring_side_init(&c->cq, c->region, c->hdr.cq_ctl_off, c->hdr.cq_off, CQ_N, UCCL_CQE_SIZE);
		p = (struct engine_ep_params){ .ep_id = i, .client_id = i + 1, .region = c->region,
					       .region_len = c->len, .hdr = &c->hdr,
					       .max_conns = CONNS, .max_outstanding = 6 };
		if (engine_ep_add(e, &p) < 0)
			abort();
	}
	if (engine_conn_add(e, 0, 0, 1, 1) < 0 || engine_conn_add(e, 0, 1, 1, 0) < 0)
		abort();
	for (int i = 0; i < NMR; i++) {
		struct mr m = { .id = mr_defs[i].id, .client_id = mr_defs[i].client,
				.rkey = mr_defs[i].rkey, .len = mr_defs[i].len, .kind = MR_MAPPED };

		/* exactly sized: malloc(len), so a one-past-the-end copy is caught */
		bufs[i] = malloc(mr_defs[i].len);
		if (!bufs[i])
			goto out;
		memset(bufs[i], 0x5a, mr_defs[i].len);
		m.base = bufs[i];
		if (engine_mr_add(e, &m) < 0)
			abort();
	}

	for (size_t rec = 0; size >= 1 + UCCL_SQE_SIZE; rec++) {
		uint8_t sel = data[0];
		struct cli *c = &cli[sel & 1];

		if (!removed[sel & 1]) {
			if (ring_prod_space(&c->sq) == 0) {
				engine_poll(e, 0);
				drain(c);
			}
			if (ring_prod_space(&c->sq) > 0) {
				memcpy(ring_prod_slot(&c->sq, 0), data + 1, UCCL_SQE_SIZE);
				ring_prod_publish(&c->sq, 1);
			}
		}
		data += 1 + UCCL_SQE_SIZE;
		size -= 1 + UCCL_SQE_SIZE;

		if (sel & 0x02)
			engine_poll(e, 0);
		if (sel & 0x04)
			drain(c);
		switch (sel >> 5) {
		case 1:   /* close one side; the id comes back once both are gone */
			engine_conn_remove(e, (sel >> 3) & 1, (sel >> 4) & 1);
			break;
		case 2:
			engine_mr_remove(e, mr_defs[(sel >> 3) & 3].client, mr_defs[(sel >> 3) & 3].id);
			break;
		case 3:
			engine_sleep_arm(e);
			engine_sleep_disarm(e);
			break;
		case 4:   /* the client goes to sleep on its CQ, or wakes up */
			c->cq.ctl->flags ^= UCCL_RING_NEED_WAKEUP;
			break;
		default:
			break;
		}
		/* the header may ask for one corrupt index after record hdr[1] */
		if ((hdr[0] & 0x80) && rec == hdr[1]) {
			struct cli *v = &cli[hdr[0] & 1];
			uint32_t val = (uint32_t)hdr[2] << 8 | hdr[3];

			if (hdr[0] & 2)
				v->sq.ctl->prod = v->sq.idx + val;
			else
				v->cq.ctl->cons = v->cq.idx + val;
			corrupt = true;
		}
	}
	for (int k = 0; k < 4; k++) {
		engine_poll(e, 0);
		for (int i = 0; i < NEP; i++)
			drain(&cli[i]);
	}

	if (hdr[0] & 0x40) {
		/* removing an endpoint with ops pending leaves nothing behind */
		engine_ep_remove(e, 0);
		removed[0] = true;
		drain(&cli[1]);
	}
	if (!corrupt) {
		/* every consumed descriptor completes exactly once: closing the
		 * remaining connections flushes whatever still waits */
		for (uint32_t i = 0; i < NEP; i++)
			for (uint32_t cn = 0; cn < CONNS; cn++)
				if (!removed[i])
					engine_conn_remove(e, i, cn);
		for (int i = 0; i < NEP; i++) {
			struct engine_ep_stats s;

			if (removed[i])
				continue;
			drain(&cli[i]);
			if (engine_ep_stats(e, (uint32_t)i, &s) < 0 || s.outstanding != 0 ||
			    s.submitted != s.completed || cli[i].reaped != s.completed)
				abort();
		}
	}

out:
	engine_free(e);
	for (int i = 0; i < NEP; i++)
		free(cli[i].region);
	for (int i = 0; i < NMR; i++)
		free(bufs[i]);
	return 0;
}
