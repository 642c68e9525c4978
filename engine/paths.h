/* SPDX-License-Identifier: MIT */
/*
 * paths: the per-path table of a channel. A path is one UDP source port (one
 * ECMP hash); the transport picks a path per chunk by power-of-two choices on
 * smoothed per-path RTT and avoids paths that lost packets recently. With a
 * path per packet (paths_set_load_first) the choice goes to the path with
 * fewer packets in flight first, RTT breaking ties: a path whose hash lands
 * on a busy link returns its ACKs later and so holds more packets.
 * Deterministic from a seed (no randomness of its own).
 */
#ifndef UCCL_ENGINE_PATHS_H
#define UCCL_ENGINE_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PATHS_MAX 256u

struct vpack;
struct vunpack;

struct paths;

struct paths_stat {
	uint64_t srtt_ns;              /* 0 until sampled */
	uint32_t inflight;             /* packets sent on it, not acknowledged or resent */
	uint64_t sent_chunks;
	uint64_t losses;
	uint64_t last_loss_ns;
};

/* n in 1..PATHS_MAX; loss_hold_ns: how long a loss keeps a path out of
 * the choice (unless every path lost recently). NULL on bad arguments. */
struct paths *paths_new(uint32_t n, uint64_t seed, uint64_t loss_hold_ns);
struct paths *paths_free(struct paths *p);     /* accepts NULL */

/* The per-path table is what an idle owner releases: paths_release frees
 * it (every path falls back to unsampled, no loss, no chunks counted; the
 * random state stays), and the next call that records something allocates
 * it again. Without a table (allocation failed) picks are uniform. */
void paths_release(struct paths *p);
size_t paths_bytes(const struct paths *p);     /* heap bytes now held */
/* A released table (random state, settings) as words appended to v, and
 * back (engine/vpack.h): 0, -EBUSY while the table is held, -ENOMEM;
 * unpack: NULL without memory or on bad input. */
int paths_pack(const struct paths *p, struct vpack *v);
struct paths *paths_unpack(struct vunpack *r);

uint16_t paths_pick(struct paths *p, uint64_t now_ns);
/* Fewer packets in flight wins the choice before RTT (off when created). */
void paths_set_load_first(struct paths *p, bool on);
/* A packet went on path / left it (acknowledged, or to be resent on
 * another); paths_clear_load: nothing is in flight any more. */
void paths_on_send(struct paths *p, uint16_t path);
void paths_on_done(struct paths *p, uint16_t path);
void paths_clear_load(struct paths *p);
uint64_t paths_load(const struct paths *p);    /* the counts added up */
/* An RTT sample on path. An estimate the choice shuns long enough is
 * tried again now and then (paths.c), so that a path slow once is not
 * left out for good. */
void paths_on_rtt(struct paths *p, uint16_t path, uint64_t rtt_ns);
void paths_on_loss(struct paths *p, uint16_t path, uint64_t now_ns);
uint32_t paths_count(const struct paths *p);
int paths_stat(const struct paths *p, uint16_t path, struct paths_stat *out);
/* Whether the per-path table is allocated (not released, or used since). */
bool paths_live(const struct paths *p);

#endif
