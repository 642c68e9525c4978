/* SPDX-License-Identifier: MIT */
/*
 * fuzz_remote: packets from another host are the data path's untrusted
 * input past the parser. One engine with one channel (its receive token is
 * written into every DATA and ACK the fuzzer sends, so that inputs get past
 * the token check and reach engine/remote.c), two endpoints of two clients
 * with remote connections on that channel, exactly sized heap regions (so
 * AddressSanitizer sees any write one byte out of bounds), and receives
 * posted through a ring. Input: records of [kind][len lo][len hi][bytes];
 * kinds feed a datagram (each packet's token patched, or as is), post a
 * receive, poll, run the transmit side with time moving on, reset or
 * remove a connection, or submit any 64-byte descriptor on either
 * endpoint (puts, gets, signals, sends, flags, bad fields) so that
 * descriptors on remote connections are fuzzed with the packets around
 * them.
 * Client 3 has a region and no endpoint: no packet may change a byte of it.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/ring.h"
#include "engine/wire.h"

#define TOKEN_RX 0x1122334455667788ull
#define TOKEN_TX 0x8877665544332211ull
#define SQ_N     16
#define CQ_N     16
#define CONNS    2
#define BUF1     4096u            /* client 1's region (rkey 0x11) */
#define BUF2     64u              /* client 2's region (rkey 0x21) */
#define BUF3     64u              /* client 3's (rkey 0x31): no connection reaches it */

struct cli {
	void *region;
	size_t len;
	struct uccl_shm_hdr hdr;
	struct ring_side sq, cq;
};

static int fz_copy(void *arg, const struct mr *dst, uint64_t dst_off, const struct mr *src,
		   uint64_t src_off, uint64_t len)
{
	(void)arg;
	if (!mr_range_ok(dst, dst_off, len) || !mr_range_ok(src, src_off, len))
		abort();
	memmove((uint8_t *)dst->base + dst_off, (const uint8_t *)src->base + src_off, len);
	return 0;
}

static void fz_notify(void *arg, uint32_t ep_id)
{
	(void)arg;
	if (ep_id >= 2)
		abort();
}

static const struct engine_mem_ops fz_mem = { .copy = fz_copy };

static void drain(struct cli *c)
{
	int n = ring_cons_avail(&c->cq);

	if (n > 0)
		ring_cons_release(&c->cq, (uint32_t)n);
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engine_params ep = { .max_endpoints = 2, .max_mrs = 4, .poll_batch = 4, .mem = &fz_mem,
				    .notify = fz_notify, .max_chans = 1, .max_remote_msgs = 64,
				    .max_unexpected_bytes = 65536, .max_unexpected_msgs = 16 };
	struct tpchan_params tp = { .tx_token = TOKEN_TX, .rx_token = TOKEN_RX, .mtu = 1500,
				    .chunk_bytes = 4096, .npaths = 2, .max_inflight_pkts = 1024,
				    .rx_window_pkts = 1024, .max_inflight_bytes = 1 << 20, .max_msgs = 64,
				    .seed = 1 };
	struct cli cli[2] = { 0 };
	uint8_t *buf1 = NULL, *buf2 = NULL, *buf3 = NULL, pkt[2048], tx[4][1500];
	struct engine_txpkt out[4];
	struct engine *e;
	uint64_t now = 1000000;
	uint64_t user = 0;

	e = engine_new(&ep);
	if (!e)
		return 0;
	for (uint32_t i = 0; i < 2; i++) {
		struct cli *c = &cli[i];
		struct engine_ep_params p;

		c->len = ring_region_layout(SQ_N, CQ_N, CONNS, &c->hdr);
		c->region = calloc(1, c->len);
		if (!c->region)
			goto out;
		ring_side_init(&c->sq, c->region, c->hdr.sq_ctl_off, c->hdr.sq_off, SQ_N, UCCL_SQE_SIZE);
		ring_side_init(&c->cq, c->region, c->hdr.cq_ctl_off, c->hdr.cq_off, CQ_N, UCCL_CQE_SIZE);
		p = (struct engine_ep_params){ .ep_id = i, .client_id = i + 1, .region = c->region,
					       .region_len = c->len, .hdr = &c->hdr, .max_conns = CONNS,
					       .max_outstanding = 8 };
		if (engine_ep_add(e, &p) < 0)
			abort();
	}
	if (engine_chan_add(e, 0, &tp) < 0)
		abort();
	/* endpoint 0: wire ids 0x10000 and 0x10001; endpoint 1: 0x20000 */
	if (engine_rconn_add(e, 0, 0, 0x10000, 0) < 0 || engine_rconn_add(e, 0, 1, 0x10001, 0) < 0 ||
	    engine_rconn_add(e, 1, 0, 0x20000, 0) < 0 ||
	    engine_rconn_connect(e, 0, 0, 7, 0x30000) < 0 || engine_rconn_connect(e, 0, 1, 7, 0x30001) < 0 ||
	    engine_rconn_connect(e, 1, 0, 8, 0x30000) < 0)
		abort();
	buf1 = malloc(BUF1);
	buf2 = malloc(BUF2);
	buf3 = malloc(BUF3);
	if (!buf1 || !buf2 || !buf3)
		goto out;
	memset(buf1, 0x5a, BUF1);
	memset(buf2, 0x5a, BUF2);
	memset(buf3, 0x5a, BUF3);
	{
		struct mr m1 = { .id = 1, .client_id = 1, .rkey = 0x11, .len = BUF1, .kind = MR_MAPPED,
				 .base = buf1 };
		struct mr m2 = { .id = 1, .client_id = 2, .rkey = 0x21, .len = BUF2, .kind = MR_MAPPED,
				 .base = buf2 };
		struct mr m3 = { .id = 1, .client_id = 3, .rkey = 0x31, .len = BUF3, .kind = MR_MAPPED,
				 .base = buf3 };
		if (engine_mr_add(e, &m1) < 0 || engine_mr_add(e, &m2) < 0 || engine_mr_add(e, &m3) < 0)
			abort();
	}
	for (int i = 0; i < 4; i++)
		out[i].buf = tx[i];

	while (size >= 3) {
		uint8_t kind = data[0] % 7;
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		switch (kind) {
		case 0:                /* a packet, token patched in */
		case 1:                /* a packet as it is */
			if (len > sizeof(pkt))
				break;
			memcpy(pkt, data, len);
			/* every packet of the datagram, as engine_rx cuts it */
			for (size_t off = 0, l; kind == 0 && off < len; off += l) {
				unsigned t;

				l = wire_first_len(pkt + off, len - off);
				t = wire_peek_type(pkt + off, l);
				if (l >= 24 && t == WIRE_DATA)
					put_le64(pkt + off + 16, TOKEN_RX);
				else if (l >= 16 && (t == WIRE_ACK || t == WIRE_NACK || t == WIRE_CREDIT))
					put_le64(pkt + off + 8, TOKEN_RX);   /* refusals and credit too */
			}
			engine_rx(e, 0, pkt, len, now);
			break;
		case 2:                /* post a receive on endpoint 0 (conn, length, tag from input) */
			if (len >= 4 && ring_prod_space(&cli[0].sq) > 0) {
				struct uccl_sqe s = {
					.opcode = UCCL_OP_RECV, .conn = data[0] % CONNS, .lmr = 1,
					.loff = (uint64_t)data[1] * 16, .len = (uint64_t)data[2] * 16,
					.rkey = data[3] == 0xff ? UCCL_TAG_ANY : data[3], .user_data = ++user,
				};
				memcpy(ring_prod_slot(&cli[0].sq, 0), &s, sizeof(s));
				ring_prod_publish(&cli[0].sq, 1);
			}
			break;
		case 3:                /* poll and reap */
			engine_poll(e, now);
			drain(&cli[0]);
			drain(&cli[1]);
			break;
		case 4:                /* time passes; the transmit side runs */
			now += 1000 + (uint64_t)len * 100000;
			while (engine_tx(e, now, out, 4) == 4)
				;
			break;
		case 5:                /* the peer closes endpoint 0's conn 1, or we do */
			if (len & 1)
				engine_conn_reset(e, 0, 1);
			else
				engine_conn_remove(e, 0, 1);
			break;
		case 6:                /* [endpoint][64-byte SQE], as the client wrote it */
			if (len >= 1 + UCCL_SQE_SIZE) {
				struct cli *c = &cli[data[0] & 1];

				if (ring_prod_space(&c->sq) > 0) {
					memcpy(ring_prod_slot(&c->sq, 0), data + 1, UCCL_SQE_SIZE);
					ring_prod_publish(&c->sq, 1);
				}
			}
			break;
		}
		data += len;
		size -= len;
	}
	engine_poll(e, now);
	for (size_t i = 0; i < BUF3; i++)
		if (buf3[i] != 0x5a)
			abort();       /* written though no connection reaches it */
out:
	engine_free(e);
	for (int i = 0; i < 2; i++)
		free(cli[i].region);
	free(buf1);
	free(buf2);
	free(buf3);
	return 0;
}
