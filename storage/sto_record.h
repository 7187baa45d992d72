/* SPDX-License-Identifier: Apache-2.0 */
/*
 * On-disk formats of the SSD tier, as a pure codec (bytes in, values out, no I/O; fuzzed by
 * tests/fuzz/fuzz_sto_record.c), and CRC-32C.
 *
 * A record is what a put writes: a 48-byte header, the key, the value at value_off, padding
 * up to rec_len (a multiple of the store's I/O alignment). hdr_crc covers the header's first
 * 44 bytes and the key; value_crc covers the value. Bucket files are records back to back;
 * file-per-key files hold one record; the offset backend's data file holds records at
 * allocator offsets.
 *
 * An index entry is a record header plus where the record lives (rec_off): bucket .meta files
 * and the offset backend's journal are sequences of entries, each with its own CRC, so a torn
 * tail is detected entry by entry. All integers are little-endian.
 */
#ifndef CRESCENT_STORAGE_STO_RECORD_H
#define CRESCENT_STORAGE_STO_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define STO_REC_MAGIC   0x4f545343u /* "CSTO" */
#define STO_ENT_MAGIC   0x45545343u /* "CSTE" */
#define STO_REC_VERSION 1u
#define STO_REC_HDR     48u /* record header bytes */
#define STO_ENT_HDR     64u /* index entry header bytes */

/* Record and entry flags. */
enum sto_rec_flag {
    STO_REC_PUT = 1u, /* a value */
    STO_REC_DEL = 2u, /* a removal (journal entries only) */
};

/* A decoded record header (or index entry: rec_off is set for entries only). */
struct sto_rec {
    uint16_t flags;
    uint16_t key_len;
    uint32_t value_off; /* from the record's start */
    uint64_t value_len;
    uint64_t rec_len; /* whole record, padding included */
    uint64_t seq;     /* store-wide put sequence; the newest wins on recovery */
    uint32_t value_crc;
    uint64_t rec_off;   /* index entries: the record's offset in its file */
    const uint8_t *key; /* points into the decoded buffer */
};

/* CRC-32C (Castagnoli) of n bytes at p, continuing from crc (0 to start). Thread-safe. */
uint32_t sto_crc32c(uint32_t crc, const void *p, size_t n);

/*
 * Fills r->value_off and r->rec_len for a record of key_len and value_len under alignment
 * align (a power of two): small values (under align) follow the key directly; larger ones start
 * on an aligned boundary. Returns 0, or -EINVAL when the sizes do not fit the format.
 */
int sto_rec_layout(struct sto_rec *r, uint32_t align);

/*
 * Writes the header and key of r (r->key, r->key_len) into out, which holds at least
 * STO_REC_HDR + key_len bytes. The value is the caller's business. Returns bytes written.
 */
size_t sto_rec_encode(const struct sto_rec *r, uint8_t *out);

/*
 * Decodes a record header and its key from the n bytes at in. Returns the header and key bytes
 * consumed (r->key points into in), 0 when n is too short to tell, or -CM_ECORRUPT (bad
 * magic, version, sizes or hdr_crc).
 */
int sto_rec_decode(const uint8_t *in, size_t n, struct sto_rec *r);

/* Bytes an index entry for r takes (STO_ENT_HDR + key, rounded to 8). */
size_t sto_ent_size(const struct sto_rec *r);

/* Encodes r (with rec_off) as an index entry into out (sto_ent_size(r) bytes); returns it. */
size_t sto_ent_encode(const struct sto_rec *r, uint8_t *out);

/*
 * Decodes one index entry from the n bytes at in. Returns the bytes consumed, 0 when n is too
 * short (a torn tail when at the end of a file), or -CM_ECORRUPT.
 */
int sto_ent_decode(const uint8_t *in, size_t n, struct sto_rec *r);

#endif
