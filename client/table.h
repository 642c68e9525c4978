/* SPDX-License-Identifier: MIT */
/*
 * table: output helpers for ucclctl. A table collects rows of cells and
 * prints them as aligned text under a header; a json writer emits one
 * well-formed JSON document with proper string escaping. Both treat strings
 * as untrusted (they come from the daemon, which got them from clients):
 * text output shows control characters escaped, JSON output is always valid
 * UTF-8.
 */
#ifndef UCCL_CLIENT_TABLE_H
#define UCCL_CLIENT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum table_align { TABLE_LEFT, TABLE_RIGHT };

struct table_col {
	const char *name;
	enum table_align align;
};

struct table;

/* A table with ncols columns; cols must outlive the table. */
struct table *table_new(const struct table_col *cols, size_t ncols);
struct table *table_free(struct table *t);        /* accepts NULL, returns NULL */

/* Append one cell to the current row; after ncols cells the next call starts
 * a new row. The formatted text is sanitised (see table_sanitize). */
int table_add(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t table_rows(const struct table *t);

/* Print header and rows, columns separated by two spaces, no trailing blanks;
 * "(none)" alone when the table has no rows. 0, -EIO or -ENOMEM. */
int table_print(const struct table *t, FILE *f);

/* Copy s into a malloc'd string where control characters, DEL and bytes
 * that are not valid UTF-8 are written as \xNN (and a backslash as \\), so
 * that a hostile name cannot move the cursor or corrupt a terminal. NULL on
 * ENOMEM. */
char *table_sanitize(const char *s);

/* Human units for a byte count: "512 B", "4.0 KiB", "1.5 GiB". */
void table_fmt_bytes(char *buf, size_t len, uint64_t bytes);
/* Human duration for milliseconds: "850ms", "42s", "3m07s", "5h02m", "2d04h". */
void table_fmt_ms(char *buf, size_t len, uint64_t ms);

/* JSON writer. Calls that do not fit the current nesting (a value where a
 * key is due, a key inside an array, too deep) latch an error that
 * json_finish reports, so callers write straight-line code and check once. */
#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool err;
	bool pretty;
	bool key_done;                   /* a key was written, its value is due */
	bool in_obj[JSON_MAX_DEPTH];     /* per level: object (true) or array */
	bool has_item[JSON_MAX_DEPTH];   /* per level: a comma is due before the next */
};

void json_init(struct json *j, FILE *f, bool pretty);
void json_obj_begin(struct json *j);
void json_obj_end(struct json *j);
void json_arr_begin(struct json *j);
void json_arr_end(struct json *j);
void json_key(struct json *j, const char *key);
void json_str(struct json *j, const char *s);     /* NULL writes null */
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
void json_bool(struct json *j, bool v);
void json_null(struct json *j);
/* Newline after the document. 0, -EINVAL if the document is incomplete or a
 * call was out of place, -EIO if writing failed. */
int json_finish(struct json *j);
/* {"key": [ ... ]}: the shape of every ucclctl list. json_list_end closes
 * both and returns json_finish's result. */
void json_list_begin(struct json *j, FILE *f, const char *key);
int json_list_end(struct json *j);

/* Shorthands for one "key": value member of an object. */
void json_kv_str(struct json *j, const char *key, const char *s);
void json_kv_u64(struct json *j, const char *key, uint64_t v);
void json_kv_i64(struct json *j, const char *key, int64_t v);
void json_kv_bool(struct json *j, const char *key, bool v);

#endif
