// SPDX-License-Identifier: Apache-2.0
/*
 * raw_fi_write: the baseline for the fabric transport benchmark. A minimal libfabric
 * FI_EP_RDM + FI_RMA loop with no engine around it: the server registers a buffer and serves
 * progress; the client posts batches of fi_write (or fi_read) into it and reports bandwidth and
 * batch latency as one JSON line. Addresses and keys travel over a plain TCP socket.
 *
 *   raw_fi_write --server [--port P]                     prints "PORT <n>", serves clients
 *   raw_fi_write --client 127.0.0.1:P --block_size N --duration S [--batch_size B]
 *                [--op write|read] [--transmit] [--json]
 *
 * The provider comes from FI_PROVIDER (default "tcp;ofi_rxm"). Completions are
 * FI_DELIVERY_COMPLETE (bytes in the target's memory), the semantics the fabric transport needs
 * on socket providers, so the comparison is like for like; --transmit uses the provider's
 * default (transmit-complete: bytes handed to the local socket) to show what that costs.
 * With FI_PROVIDER=efa the default is --transmit, as in the fabric transport.
 */
#include "common/fmacros.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define RAW_NAME_MAX 256

struct raw_fab {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *mr;
    void *buf;
    size_t buf_len;
    void *desc;
    uint64_t key;
};

/* Exchange message, both directions: the sender's endpoint name and its buffer. */
struct raw_hello {
    uint64_t buf_addr; /* remote address to use in fi_write (0-based without FI_MR_VIRT_ADDR) */
    uint64_t buf_len;
    uint64_t key;
    uint64_t name_len;
    uint8_t name[RAW_NAME_MAX];
};

static void die(const char *what, int rc) {
    fprintf(stderr, "raw_fi_write: %s: %s (%d)\n", what, fi_strerror(rc < 0 ? -rc : rc), rc);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int full_io(int fd, void *buf, size_t len, int wr) {
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* FI_DELIVERY_COMPLETE (completion = bytes in the target's memory), the semantics the fabric
 * transport uses on socket providers; --transmit keeps the provider's default instead. */
static int delivery_complete = 1;

static void fab_open(struct raw_fab *f, size_t buf_len) {
    const char *prov = getenv("FI_PROVIDER");
    struct fi_info *hints = fi_allocinfo();
    int rc;

    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_RMA;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (delivery_complete)
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->fabric_attr->prov_name = strdup(prov && *prov ? prov : "tcp;ofi_rxm");
    rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, 0, hints, &f->info);
    if (rc)
        die("fi_getinfo", rc);
    fi_freeinfo(hints);
    if ((rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL)))
        die("fi_fabric", rc);
    if ((rc = fi_domain(f->fabric, f->info, &f->domain, NULL)))
        die("fi_domain", rc);
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    if ((rc = fi_av_open(f->domain, &av_attr, &f->av, NULL)))
        die("fi_av_open", rc);
    struct fi_cq_attr cq_attr = {
        .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_UNSPEC, .size = 4096};
    if ((rc = fi_cq_open(f->domain, &cq_attr, &f->cq, NULL)))
        die("fi_cq_open", rc);
    if ((rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)))
        die("fi_endpoint", rc);
    if ((rc = fi_ep_bind(f->ep, &f->av->fid, 0)))
        die("fi_ep_bind av", rc);
    if ((rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)))
        die("fi_ep_bind cq", rc);
    if ((rc = fi_enable(f->ep)))
        die("fi_enable", rc);

    f->buf_len = buf_len;
    if (posix_memalign(&f->buf, 4096, buf_len))
        die("posix_memalign", -FI_ENOMEM);
    memset(f->buf, 0xa5, buf_len);
    uint64_t mr_mode = f->info->domain_attr->mr_mode;
    rc = fi_mr_reg(f->domain, f->buf, buf_len,
                   FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 1, 0, &f->mr, NULL);
    if (rc)
        die("fi_mr_reg", rc);
    if (mr_mode & FI_MR_ENDPOINT) {
        if ((rc = fi_mr_bind(f->mr, &f->ep->fid, 0)) || (rc = fi_mr_enable(f->mr)))
            die("fi_mr_bind", rc);
    }
    f->desc = fi_mr_desc(f->mr);
    f->key = fi_mr_key(f->mr);
}

static void fab_hello(struct raw_fab *f, struct raw_hello *h) {
    size_t len = sizeof(h->name);
    memset(h, 0, sizeof(*h));
    int rc = fi_getname(&f->ep->fid, h->name, &len);
    if (rc)
        die("fi_getname", rc);
    h->name_len = len;
    h->buf_len = f->buf_len;
    h->key = f->key;
    h->buf_addr =
        (f->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)f->buf : 0;
}

static void fab_close(struct raw_fab *f) {
    fi_close(&f->mr->fid);
    fi_close(&f->ep->fid);
    fi_close(&f->cq->fid);
    fi_close(&f->av->fid);
    fi_close(&f->domain->fid);
    fi_close(&f->fabric->fid);
    fi_freeinfo(f->info);
    free(f->buf);
}

/* Serves one client: exchange hellos, then drive progress until the client hangs up. */
static void serve_client(int cfd) {
    struct raw_fab f;
    struct raw_hello mine, peer;
    uint64_t want;
    fi_addr_t peer_addr;

    memset(&f, 0, sizeof(f));
    if (full_io(cfd, &want, sizeof(want), 0))
        return;
    fab_open(&f, want ? want : 4096);
    fab_hello(&f, &mine);
    if (full_io(cfd, &peer, sizeof(peer), 0) || full_io(cfd, &mine, sizeof(mine), 1))
        goto out;
    if (fi_av_insert(f.av, peer.name, 1, &peer_addr, 0, NULL) != 1)
        die("fi_av_insert", -FI_EINVAL);
    /* Serve: drive progress (the target of RMA must progress on manual-progress providers),
     * and look at the control socket only every few milliseconds, so the data path pays for
     * no extra system call. */
    uint64_t next_check = 0;
    for (;;) {
        struct fi_cq_entry ent[16];
        ssize_t n = fi_cq_sread(f.cq, ent, 16, NULL, 1);
        uint64_t now = n > 0 ? 0 : now_ns();
        if (n > 0 || now < next_check)
            continue;
        next_check = now + 5000000;
        struct pollfd pfd = {.fd = cfd, .events = POLLIN};
        if (poll(&pfd, 1, 0) > 0) {
            char c;
            if (recv(cfd, &c, 1, 0) <= 0)
                break;
        }
    }
out:
    fab_close(&f);
}

static int run_server(int port) {
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    socklen_t slen = sizeof(sa);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 8) ||
        getsockname(lfd, (struct sockaddr *)&sa, &slen)) {
        perror("raw_fi_write: listen");
        return 1;
    }
    printf("PORT %d\n", ntohs(sa.sin_port));
    fflush(stdout);
    for (;;) {
        int cfd = accept(lfd, NULL, NULL);
        if (cfd < 0) {
            if (errno == EINTR)
                continue;
            perror("raw_fi_write: accept");
            return 1;
        }
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        serve_client(cfd);
        close(cfd);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Posts one RMA operation, driving the CQ while the provider answers -FI_EAGAIN. */
static void post_one(struct raw_fab *f, int is_read, size_t off, size_t len, fi_addr_t dest,
                     const struct raw_hello *peer, struct fi_context *ctx, size_t *done) {
    for (;;) {
        ssize_t rc;
        if (is_read)
            rc = fi_read(f->ep, (char *)f->buf + off, len, f->desc, dest, peer->buf_addr + off,
                         peer->key, ctx);
        else
            rc = fi_write(f->ep, (char *)f->buf + off, len, f->desc, dest, peer->buf_addr + off,
                          peer->key, ctx);
        if (rc == 0)
            return;
        if (rc != -FI_EAGAIN)
            die(is_read ? "fi_read" : "fi_write", (int)rc);
        struct fi_cq_entry ent[16];
        ssize_t n = fi_cq_read(f->cq, ent, 16);
        if (n > 0)
            *done += (size_t)n;
        else if (n != -FI_EAGAIN)
            die("fi_cq_read", (int)n);
    }
}

static void wait_done(struct raw_fab *f, size_t *done, size_t want) {
    while (*done < want) {
        struct fi_cq_entry ent[16];
        ssize_t n = fi_cq_read(f->cq, ent, 16);
        if (n > 0) {
            *done += (size_t)n;
        } else if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(f->cq, &err, 0);
            die("completion", -err.err);
        } else if (n != -FI_EAGAIN) {
            die("fi_cq_read", (int)n);
        }
    }
}

static int run_client(const char *target, size_t block, double duration, size_t batch, int is_read,
                      int json) {
    char host[64];
    const char *colon = strrchr(target, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int fd, one = 1;

    if (!colon || (size_t)(colon - target) >= sizeof(host)) {
        fprintf(stderr, "raw_fi_write: --client wants HOST:PORT\n");
        return 2;
    }
    memcpy(host, target, (size_t)(colon - target));
    host[colon - target] = 0;
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "raw_fi_write: bad host %s\n", host);
        return 2;
    }
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        perror("raw_fi_write: connect");
        return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    struct raw_fab f;
    struct raw_hello mine, peer;
    uint64_t want = (uint64_t)block * batch;
    fi_addr_t dest;
    memset(&f, 0, sizeof(f));
    fab_open(&f, want);
    fab_hello(&f, &mine);
    if (full_io(fd, &want, sizeof(want), 1) || full_io(fd, &mine, sizeof(mine), 1) ||
        full_io(fd, &peer, sizeof(peer), 0)) {
        fprintf(stderr, "raw_fi_write: handshake failed\n");
        return 1;
    }
    if (fi_av_insert(f.av, peer.name, 1, &dest, 0, NULL) != 1)
        die("fi_av_insert", -FI_EINVAL);

    struct fi_context *ctx = calloc(batch, sizeof(*ctx));
    size_t cap = 1 << 16, nlat = 0, done = 0, posted = 0;
    uint64_t *lat = malloc(cap * sizeof(*lat));
    uint64_t bytes = 0;

    /* Warm-up batch: connects the endpoint pair outside the measurement. */
    for (size_t i = 0; i < batch; i++)
        post_one(&f, is_read, i * block, block, dest, &peer, &ctx[i], &done);
    posted += batch;
    wait_done(&f, &done, posted);

    uint64_t start = now_ns(), end = start + (uint64_t)(duration * 1e9), t = start;
    while (t < end) {
        uint64_t b0 = now_ns();
        for (size_t i = 0; i < batch; i++)
            post_one(&f, is_read, i * block, block, dest, &peer, &ctx[i], &done);
        posted += batch;
        wait_done(&f, &done, posted);
        t = now_ns();
        bytes += (uint64_t)block * batch;
        if (nlat == cap) {
            cap *= 2;
            lat = realloc(lat, cap * sizeof(*lat));
        }
        lat[nlat++] = t - b0;
    }
    double secs = (double)(t - start) / 1e9;
    qsort(lat, nlat, sizeof(*lat), cmp_u64);
    double p50 = (double)lat[nlat / 2] / 1e3, p99 = (double)lat[(nlat * 99) / 100] / 1e3;
    double gbps = (double)bytes / secs / 1e9;
    if (json)
        printf("{\"tool\":\"raw_fi_write\",\"provider\":\"%s\",\"op\":\"%s\",\"block_size\":%zu,"
               "\"batch_size\":%zu,\"completion\":\"%s\",\"GBps\":%.4f,\"p50_us\":%.2f,\"p99_us\":%"
               ".2f,\"ops\":%zu}\n",
               f.info->fabric_attr->prov_name, is_read ? "read" : "write", block, batch,
               delivery_complete ? "delivery" : "transmit", gbps, p50, p99, nlat * batch);
    else
        printf("%s %zu B x %zu: %.3f GB/s, batch p50 %.1f us, p99 %.1f us\n",
               is_read ? "read" : "write", block, batch, gbps, p50, p99);
    free(lat);
    free(ctx);
    fab_close(&f);
    close(fd);
    return 0;
}

static void usage(void) {
    fprintf(stderr,
            "usage: raw_fi_write --server [--port P]\n"
            "       raw_fi_write --client HOST:PORT --block_size N --duration S\n"
            "                    [--batch_size B] [--op write|read] [--transmit] [--json]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *client = NULL;
    int server = 0, port = 0, json = 0, is_read = 0, explicit_completion = 0;
    size_t block = 65536, batch = 1;
    double duration = 2.0;

    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--server"))
            server = 1;
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--delivery"))
            delivery_complete = 1, explicit_completion = 1;
        else if (!strcmp(a, "--transmit"))
            delivery_complete = 0, explicit_completion = 1;
        else if (!v)
            usage();
        else if (!strcmp(a, "--port"))
            port = atoi(v), i++;
        else if (!strcmp(a, "--client"))
            client = v, i++;
        else if (!strcmp(a, "--block_size"))
            block = strtoull(v, NULL, 0), i++;
        else if (!strcmp(a, "--batch_size"))
            batch = strtoull(v, NULL, 0), i++;
        else if (!strcmp(a, "--duration"))
            duration = atof(v), i++;
        else if (!strcmp(a, "--op"))
            is_read = !strcmp(v, "read"), i++;
        else
            usage();
    }
    if (server == !!client || block == 0 || batch == 0 || duration <= 0)
        usage();
    const char *prov = getenv("FI_PROVIDER");
    if (prov && !strncmp(prov, "efa", 3) && !explicit_completion)
        delivery_complete = 0;
    if (server)
        return run_server(port);
    return run_client(client, block, duration, batch, is_read, json);
}
