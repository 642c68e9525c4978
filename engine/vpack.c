/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/vpack.h"

#define VARINT_MAX 10u                 /* bytes in a 64-bit LEB128 value */

static bool room(struct vpack *v, size_t n)
{
	size_t cap;
	uint8_t *b;

	if (v->err)
		return false;
	if (v->len + n <= v->cap)
		return true;
	cap = v->cap ? v->cap * 2 : 256;
	while (cap < v->len + n)
		cap *= 2;
	b = realloc(v->buf, cap);
	if (!b) {
		v->err = true;
		return false;
	}
	v->buf = b;
	v->cap = cap;
	return true;
}

/* zigzag, then LEB128: small negative numbers (all-ones "none" markers)
 * stay as short as small positive ones */
static void put_word(struct vpack *v, uint64_t w)
{
	uint64_t z = (w << 1) ^ (uint64_t)((int64_t)w >> 63);

	if (!room(v, VARINT_MAX))
		return;
	while (z >= 0x80) {
		v->buf[v->len++] = (uint8_t)(z | 0x80);
		z >>= 7;
	}
	v->buf[v->len++] = (uint8_t)z;
}

static bool get_word(struct vunpack *r, uint64_t *w)
{
	uint64_t z = 0;

	for (unsigned sh = 0; sh < 7 * VARINT_MAX; sh += 7) {
		uint8_t b;

		if (r->p >= r->end)
			break;
		b = *r->p++;
		/* the tenth byte holds bit 63 only */
		if (sh == 63 && b > 1)
			break;
		z |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80)) {
			*w = (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
			return true;
		}
	}
	r->err = true;
	return false;
}

void vpack_words(struct vpack *v, const void *obj, size_t n)
{
	const uint8_t *s = obj;

	for (size_t off = 0; off < n; off += 8) {
		uint64_t w = 0;

		memcpy(&w, s + off, n - off < 8 ? n - off : 8);
		put_word(v, w);
	}
}

bool vunpack_words(struct vunpack *r, void *obj, size_t n)
{
	uint8_t *d = obj;

	for (size_t off = 0; off < n; off += 8) {
		uint64_t w;

		if (r->err || !get_word(r, &w))
			return false;
		memcpy(d + off, &w, n - off < 8 ? n - off : 8);
	}
	return true;
}
