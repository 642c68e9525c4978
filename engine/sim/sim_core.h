/* SPDX-License-Identifier: MIT */
/*
 * sim_core: the clockless heart of the simulated fabric. An event queue
 * ordered by virtual time in nanoseconds, ties broken by insertion order so
 * that a run is a pure function of its inputs, and a small seeded random
 * number generator. No I/O, no clock: whoever pops an event is the clock.
 */
#ifndef UCCL_ENGINE_SIM_SIM_CORE_H
#define UCCL_ENGINE_SIM_SIM_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_ev {
	uint64_t t;                    /* virtual ns */
	uint64_t seq;                  /* insertion order: the tie-break */
	uint32_t kind;                 /* caller's event type */
	uint32_t id;                   /* caller's index (port, host, flow) */
	void *p;                       /* caller's pointer (a packet) */
};

struct sim_evq;

struct sim_evq *sim_evq_new(void);
struct sim_evq *sim_evq_free(struct sim_evq *q);      /* accepts NULL; does not free ev.p */

/* 0 or -ENOMEM. */
int sim_evq_push(struct sim_evq *q, uint64_t t, uint32_t kind, uint32_t id, void *p);
/* The earliest event into *out: true, or false if the queue is empty. */
bool sim_evq_pop(struct sim_evq *q, struct sim_ev *out);
size_t sim_evq_len(const struct sim_evq *q);
/* The i-th stored event, in no particular order (for freeing payloads). */
const struct sim_ev *sim_evq_at(const struct sim_evq *q, size_t i);

/* splitmix64 on a caller-held state: deterministic, never stuck at zero. */
uint64_t sim_rand(uint64_t *state);
/* true with probability ppm / 1e6. */
bool sim_chance(uint64_t *state, uint32_t ppm);
/* A well-mixed hash of a 64-bit value (for ECMP, seeds, tokens). */
uint64_t sim_mix(uint64_t x);

#endif
