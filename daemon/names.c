/* SPDX-License-Identifier: MIT */
/*
 * names: hash table of listen names.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/names.h"

struct name_ent {
	struct name_ent *next;
	void *val;
	char name[NAME_MAX_LEN + 1];
};

struct names {
	uint32_t nb;
	struct name_ent **b;
};

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;    /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

struct names *names_new(uint32_t buckets)
{
	struct names *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->nb = buckets ? buckets : 1;
	n->b = calloc(n->nb, sizeof(*n->b));
	if (!n->b) {
		free(n);
		return NULL;
	}
	return n;
}

struct names *names_free(struct names *n)
{
	if (!n)
		return NULL;
	for (uint32_t i = 0; i < n->nb; i++) {
		struct name_ent *e = n->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(n->b);
	free(n);
	return NULL;
}

bool names_valid(const char *name)
{
	size_t len = strnlen(name, NAME_MAX_LEN + 1);

	if (len == 0 || len > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == ':' || c == '-'))
			return false;
	}
	return true;
}

int names_add(struct names *n, const char *name, void *val)
{
	struct name_ent *e;
	uint32_t h;

	if (!names_valid(name))
		return -EINVAL;
	if (names_find(n, name))
		return -EADDRINUSE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	strcpy(e->name, name);
	e->val = val;
	h = hash(name) % n->nb;
	e->next = n->b[h];
	n->b[h] = e;
	return 0;
}

void names_del(struct names *n, const char *name)
{
	struct name_ent **pp = &n->b[hash(name) % n->nb];

	for (; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name) == 0) {
			struct name_ent *e = *pp;
			*pp = e->next;
			free(e);
			return;
		}
	}
}

void *names_find(const struct names *n, const char *name)
{
	struct name_ent *e = n->b[hash(name) % n->nb];

	for (; e; e = e->next)
		if (strcmp(e->name, name) == 0)
			return e->val;
	return NULL;
}
