/* SPDX-License-Identifier: MIT */
/*
 * table: aligned text tables and a small JSON writer for ucclctl's output.
 * Every string that reaches the terminal or a JSON document passes through
 * one UTF-8 check here, because names are chosen by untrusted clients.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

struct table {
	const struct table_col *cols;
	size_t ncols;
	char **cells;                    /* row-major, ncells used of cap */
	size_t ncells;
	size_t cap;
};

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if the bytes there are
 * not one (truncated, overlong, surrogate, past U+10FFFF). s is NUL-ended,
 * and NUL is never a continuation byte, so reads stop at the end. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

char *table_sanitize(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	/* worst case every byte becomes \xNN */
	char *out = malloc(len * 4 + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '\\') {
			/* doubled, so that a literal "\x1b" cannot pass for an escape */
			memcpy(o, "\\\\", 2);
			o += 2;
			p++;
		} else if (n == 1 && *p >= 0x20 && *p != 0x7f) {
			*o++ = (char)*p++;
		} else if (n > 1 && !(p[0] == 0xc2 && p[1] < 0xa0)) {
			/* (U+0080..U+009F are C1 controls: escaped below) */
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			o += sprintf(o, "\\x%02x", *p++);
		}
	}
	*o = '\0';
	return out;
}

/* Columns a sanitised cell takes: one per code point (wide glyphs are rare
 * in names; counting them as one keeps this free of locale state). */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

struct table *table_new(const struct table_col *cols, size_t ncols)
{
	struct table *t;

	if (ncols == 0)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->cols = cols;
	t->ncols = ncols;
	return t;
}

struct table *table_free(struct table *t)
{
	if (!t)
		return NULL;
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
	return NULL;
}

int table_add(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *raw, *cell;
	int r;

	if (t->ncells == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		t->cells = c;
		t->cap = cap;
	}
	va_start(ap, fmt);
	r = vasprintf(&raw, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	cell = table_sanitize(raw);
	free(raw);
	if (!cell)
		return -ENOMEM;
	t->cells[t->ncells++] = cell;
	return 0;
}

size_t table_rows(const struct table *t)
{
	return (t->ncells + t->ncols - 1) / t->ncols;
}

static void print_row(const struct table *t, const size_t *width, const char *const *cell,
		      size_t n, FILE *f)
{
	/* no padding after the last cell: trailing blanks upset diff and grep */
	for (size_t c = 0; c < n; c++) {
		size_t w = text_width(cell[c]);
		size_t pad = width[c] > w ? width[c] - w : 0;
		bool last = c + 1 == n;

		if (c > 0)
			fputs("  ", f);
		if (t->cols[c].align == TABLE_RIGHT)
			fprintf(f, "%*s%s", (int)pad, "", cell[c]);
		else
			fprintf(f, "%s%*s", cell[c], last ? 0 : (int)pad, "");
	}
	fputc('\n', f);
}

int table_print(const struct table *t, FILE *f)
{
	size_t *width;
	const char **hdr;
	size_t rows = table_rows(t);

	if (rows == 0) {
		fputs("(none)\n", f);
		return ferror(f) ? -EIO : 0;
	}
	width = calloc(t->ncols, sizeof(*width));
	hdr = calloc(t->ncols, sizeof(*hdr));
	if (!width || !hdr) {
		free(width);
		free(hdr);
		return -ENOMEM;
	}
	for (size_t c = 0; c < t->ncols; c++) {
		hdr[c] = t->cols[c].name;
		width[c] = text_width(hdr[c]);
	}
	for (size_t i = 0; i < t->ncells; i++) {
		size_t w = text_width(t->cells[i]);

		if (w > width[i % t->ncols])
			width[i % t->ncols] = w;
	}
	print_row(t, width, hdr, t->ncols, f);
	for (size_t r = 0; r < rows; r++) {
		size_t first = r * t->ncols;
		size_t n = t->ncells - first < t->ncols ? t->ncells - first : t->ncols;

		print_row(t, width, (const char *const *)t->cells + first, n, f);
	}
	free(width);
	free(hdr);
	return ferror(f) ? -EIO : 0;
}

void table_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	size_t u = 0;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	v /= 1024;
	/* by the value as printed (one decimal): 1023.96 KiB is "1.0 MiB" */
	while (v >= 1023.95 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
}

void table_fmt_ms(char *buf, size_t len, uint64_t ms)
{
	uint64_t s = ms / 1000;

	if (ms < 1000)
		snprintf(buf, len, "%" PRIu64 "ms", ms);
	else if (s < 60)
		snprintf(buf, len, "%" PRIu64 "s", s);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
}

/* JSON */

void json_init(struct json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
}

static void newline_indent(struct json *j, int depth)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < depth; i++)
		fputs("  ", j->f);
}

/* Everything a value needs written before it: a comma and indentation in an
 * array, nothing after a key. Returns false (and latches the error) when a
 * value is not allowed here. Level 0 is the document, which holds one value. */
static bool value_prefix(struct json *j)
{
	int d = j->depth;

	if (j->err)
		return false;
	if (d > 0 && j->in_obj[d]) {
		if (!j->key_done)
			goto bad;
		j->key_done = false;
		return true;
	}
	if (d == 0) {
		if (j->has_item[0])
			goto bad;
		j->has_item[0] = true;
		return true;
	}
	if (j->has_item[d])
		fputc(',', j->f);
	j->has_item[d] = true;
	newline_indent(j, d);
	return true;
bad:
	j->err = true;
	return false;
}

static void open_level(struct json *j, bool obj)
{
	if (!value_prefix(j))
		return;
	if (j->depth + 1 >= JSON_MAX_DEPTH) {
		j->err = true;
		return;
	}
	fputc(obj ? '{' : '[', j->f);
	j->depth++;
	j->in_obj[j->depth] = obj;
	j->has_item[j->depth] = false;
}

static void close_level(struct json *j, bool obj)
{
	if (j->err)
		return;
	if (j->depth == 0 || j->in_obj[j->depth] != obj || j->key_done) {
		j->err = true;
		return;
	}
	if (j->has_item[j->depth])
		newline_indent(j, j->depth - 1);
	fputc(obj ? '}' : ']', j->f);
	j->depth--;
}

void json_obj_begin(struct json *j)
{
	open_level(j, true);
}

void json_obj_end(struct json *j)
{
	close_level(j, true);
}

void json_arr_begin(struct json *j)
{
	open_level(j, false);
}

void json_arr_end(struct json *j)
{
	close_level(j, false);
}

static void put_string(struct json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', j->f);
	while (*p) {
		size_t n = utf8_len(p);

		if (n > 1) {
			fwrite(p, 1, n, j->f);
			p += n;
			continue;
		}
		if (n == 0) {
			/* not UTF-8: a JSON reader would refuse the whole document */
			fputs("\\ufffd", j->f);
			p++;
			continue;
		}
		switch (*p) {
		case '"': fputs("\\\"", j->f); break;
		case '\\': fputs("\\\\", j->f); break;
		case '\b': fputs("\\b", j->f); break;
		case '\f': fputs("\\f", j->f); break;
		case '\n': fputs("\\n", j->f); break;
		case '\r': fputs("\\r", j->f); break;
		case '\t': fputs("\\t", j->f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(j->f, "\\u%04x", *p);
			else
				fputc(*p, j->f);
		}
		p++;
	}
	fputc('"', j->f);
}

void json_key(struct json *j, const char *key)
{
	int d = j->depth;

	if (j->err)
		return;
	if (d == 0 || !j->in_obj[d] || j->key_done) {
		j->err = true;
		return;
	}
	if (j->has_item[d])
		fputc(',', j->f);
	j->has_item[d] = true;
	newline_indent(j, d);
	put_string(j, key);
	fputs(j->pretty ? ": " : ":", j->f);
	j->key_done = true;
}

void json_str(struct json *j, const char *s)
{
	if (!s) {
		json_null(j);
		return;
	}
	if (value_prefix(j))
		put_string(j, s);
}

void json_u64(struct json *j, uint64_t v)
{
	if (value_prefix(j))
		fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct json *j, int64_t v)
{
	if (value_prefix(j))
		fprintf(j->f, "%" PRId64, v);
}

void json_bool(struct json *j, bool v)
{
	if (value_prefix(j))
		fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	if (value_prefix(j))
		fputs("null", j->f);
}

int json_finish(struct json *j)
{
	if (j->err || j->depth != 0 || !j->has_item[0])
		return -EINVAL;
	fputc('\n', j->f);
	return ferror(j->f) ? -EIO : 0;
}

void json_kv_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_str(j, s);
}

void json_kv_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	json_u64(j, v);
}

void json_kv_i64(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	json_i64(j, v);
}

void json_kv_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	json_bool(j, v);
}

void json_list_begin(struct json *j, FILE *f, const char *key)
{
	json_init(j, f, true);
	json_obj_begin(j);
	json_key(j, key);
	json_arr_begin(j);
}

int json_list_end(struct json *j)
{
	json_arr_end(j);
	json_obj_end(j);
	return json_finish(j);
}
