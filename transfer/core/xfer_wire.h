/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transfer wire header and segment-descriptor codec: pure, I/O-free encode/decode functions
 * (CONTRIBUTING.md, "Layout"), unit-tested and fuzzed without sockets. All integers are
 * little-endian.
 *
 * Wire header (40 bytes, every message on an engine listener connection starts with one):
 *   0  u32 magic "CXW1"      4  u8 version (1)      5  u8 op      6  u16 flags
 *   8  i32 status (replies)  12 u32 reserved (0)    16 u64 id      24 u64 addr    32 u64 len
 * A request may be followed by len payload bytes (WRITE); a reply by len bytes (READ, DESC).
 */
#ifndef CRESCENT_TRANSFER_CORE_XFER_WIRE_H
#define CRESCENT_TRANSFER_CORE_XFER_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XFER_WIRE_MAGIC   0x31575843u /* "CXW1" read as little-endian u32 */
#define XFER_WIRE_VERSION 1
#define XFER_WIRE_HDR_LEN 40

/* Largest payload a single message may announce (1 TiB); handlers apply tighter limits. */
#define XFER_WIRE_MAX_LEN (1ull << 40)

/*
 * Message opcodes. Ranges are reserved per owner so transports never collide:
 * 0-15 core, 16-31 tcp, 32-47 rdma (verbs), 48-63 fabric, 64-79 shm.
 */
enum xfer_wire_op {
    XFER_WIRE_DESC_GET = 1,   /* core: fetch the engine's descriptor; reply carries it */
    XFER_WIRE_PING = 2,       /* core: liveness; empty reply */
    XFER_WIRE_TCP_READ = 16,  /* tcp: reply carries len bytes read from addr */
    XFER_WIRE_TCP_WRITE = 17, /* tcp: request carries len bytes to write at addr */
    XFER_WIRE_RDMA_FIRST = 32,
    XFER_WIRE_RDMA_LAST = 47,
    XFER_WIRE_FABRIC_FIRST = 48,
    XFER_WIRE_FABRIC_LAST = 63,
    XFER_WIRE_SHM_FIRST = 64,
    XFER_WIRE_SHM_LAST = 79,
    XFER_WIRE_OP_MAX = 79 /* highest valid opcode */
};

/* Header flags. */
#define XFER_WIRE_F_REPLY 0x0001u /* this message answers the request with the same id */
#define XFER_WIRE_F_MASK  0x0001u /* all defined flags */

/* Decoded header. */
struct xfer_wire_hdr {
    uint8_t version; /* XFER_WIRE_VERSION */
    uint8_t op;      /* enum xfer_wire_op */
    uint16_t flags;  /* XFER_WIRE_F_* */
    int32_t status;  /* replies: 0 or a negative error code */
    uint64_t id;     /* request id chosen by the sender, echoed in the reply */
    uint64_t addr;   /* remote address (READ/WRITE) */
    uint64_t len;    /* payload length that follows this header (or requested, READ) */
};

/* Encodes h into out[XFER_WIRE_HDR_LEN]. Never fails. */
void xfer_wire_encode(const struct xfer_wire_hdr *h, uint8_t out[XFER_WIRE_HDR_LEN]);

/*
 * Decodes len bytes at buf into *h. Returns XFER_WIRE_HDR_LEN on success, -EAGAIN when fewer
 * than XFER_WIRE_HDR_LEN bytes are available, -CM_EPROTOCOL for a bad magic, opcode, flag,
 * reserved field or length, -CM_EINVALID_VERSION for an unknown version.
 */
int xfer_wire_decode(const uint8_t *buf, size_t len, struct xfer_wire_hdr *h);

/* ---- little-endian helpers shared by the codecs ---- */

/* Each is one load or store of the word on a little-endian host (the byte-by-byte loops these
 * replace were not merged by the compiler: ~400 instructions per tcp request and reply). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define XFER_LE16(v) __builtin_bswap16(v)
#define XFER_LE32(v) __builtin_bswap32(v)
#define XFER_LE64(v) __builtin_bswap64(v)
#else
#define XFER_LE16(v) (v)
#define XFER_LE32(v) (v)
#define XFER_LE64(v) (v)
#endif

static inline void xfer_put_u16(uint8_t *p, uint16_t v) {
    v = XFER_LE16(v);
    memcpy(p, &v, sizeof(v));
}
static inline void xfer_put_u32(uint8_t *p, uint32_t v) {
    v = XFER_LE32(v);
    memcpy(p, &v, sizeof(v));
}
static inline void xfer_put_u64(uint8_t *p, uint64_t v) {
    v = XFER_LE64(v);
    memcpy(p, &v, sizeof(v));
}
static inline uint16_t xfer_get_u16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return XFER_LE16(v);
}
static inline uint32_t xfer_get_u32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return XFER_LE32(v);
}
static inline uint64_t xfer_get_u64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return XFER_LE64(v);
}

#endif
