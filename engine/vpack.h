/* SPDX-License-Identifier: MIT */
/*
 * vpack: a growable byte string of 64-bit words, each stored as a zigzag
 * LEB128 varint, for keeping an idle object's fixed state small. Counters,
 * psns and flags are mostly small numbers and zeros, and "none" markers are
 * all ones (-1): each of those takes one or two bytes instead of eight.
 * Only for state this process packed itself; not a parser of foreign bytes.
 */
#ifndef UCCL_ENGINE_VPACK_H
#define UCCL_ENGINE_VPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vpack {
	uint8_t *buf;                  /* malloc'd; the caller takes it */
	size_t len, cap;
	bool err;                      /* an allocation failed: buf is unusable */
};

struct vunpack {
	const uint8_t *p, *end;
	bool err;                      /* ran past the end or a varint was too long */
};

/* Append bytes [0, n) of obj as ceil(n / 8) words (the last one padded
 * with zeros). Failure sets v->err; later calls then do nothing. */
void vpack_words(struct vpack *v, const void *obj, size_t n);
/* Read back what vpack_words(obj, n) wrote: exactly n bytes into obj.
 * false (and r->err set) when the input is short or bad. */
bool vunpack_words(struct vunpack *r, void *obj, size_t n);

#endif
