/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP reply writer: appends RESP2 or RESP3 encodings to a struct cm_buf. Functions that
 * take `proto` pick the encoding (2 or 3; anything but 3 means RESP2) the way Redis's
 * addReply* functions follow the client's HELLO version. All functions abort on OOM
 * (server policy) and are thread-safe as long as each buffer has one writer.
 */
#ifndef CRESCENT_REDIS_COMPAT_RESP_WRITE_H
#define CRESCENT_REDIS_COMPAT_RESP_WRITE_H

#include "common/cm_buf.h"

#include <stddef.h>

/* "+s\r\n"; s must not contain CR or LF. */
void resp_add_simple(struct cm_buf *b, const char *s);
/* Error reply; see resp_write.c for the "-ERR " rule. CR/LF in msg become spaces. */
void resp_add_error(struct cm_buf *b, const char *msg, size_t len);
/* As resp_add_error with printf formatting. */
void resp_add_errorf(struct cm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ":v\r\n". */
void resp_add_int(struct cm_buf *b, long long v);
/* "$n\r\n" + n bytes + "\r\n". */
void resp_add_bulk(struct cm_buf *b, const void *p, size_t n);
/* Bulk string of a NUL-terminated string. */
void resp_add_bulk_cstr(struct cm_buf *b, const char *s);
/* Only "$n\r\n"; the caller sends the n payload bytes and "\r\n" itself. */
void resp_add_bulk_hdr(struct cm_buf *b, size_t n);
/* Bulk string holding the decimal text of v. */
void resp_add_bulk_ll(struct cm_buf *b, long long v);
/* RESP3 ",d\r\n"; RESP2 a bulk string; both use %.17g and "inf"/"-inf" like Redis 7.0. */
void resp_add_double(struct cm_buf *b, int proto, double d);
/* Null bulk: "$-1\r\n" (RESP2) or "_\r\n" (RESP3). */
void resp_add_null(struct cm_buf *b, int proto);
/* Null array: "*-1\r\n" (RESP2) or "_\r\n" (RESP3). */
void resp_add_null_array(struct cm_buf *b, int proto);
/* "*n\r\n". */
void resp_add_array_hdr(struct cm_buf *b, long n);
/* n key/value pairs follow: "%n\r\n" (RESP3) or "*<2n>\r\n" (RESP2). */
void resp_add_map_hdr(struct cm_buf *b, int proto, long n);
/* "~n\r\n" (RESP3) or "*n\r\n" (RESP2). */
void resp_add_set_hdr(struct cm_buf *b, int proto, long n);
/* "#t\r\n"/"#f\r\n" (RESP3) or ":1\r\n"/":0\r\n" (RESP2). */
void resp_add_bool(struct cm_buf *b, int proto, int v);
/* RESP3 "=<n+4>\r\next:..." (ext: 3 chars, e.g. "txt"); RESP2 a plain bulk string. */
void resp_add_verbatim(struct cm_buf *b, int proto, const char *p, size_t n, const char *ext);
/* ">n\r\n" (RESP3) or "*n\r\n" (RESP2). */
void resp_add_push_hdr(struct cm_buf *b, int proto, long n);
/* RESP3 "|n\r\n" attribute header; RESP2 clients get nothing (the caller must skip pairs). */
void resp_add_attr_hdr(struct cm_buf *b, int proto, long n);
/* Appends raw protocol bytes unchanged. */
void resp_add_raw(struct cm_buf *b, const void *p, size_t n);

/* Writes the decimal text of v to dst (>= 21 bytes), returns its length. No NUL added. */
size_t resp_ll2str(char *dst, long long v);

#endif
