/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Private header of the Kubernetes Lease election backend (ha/k8s/): API access configuration
 * (in-cluster service account or kubeconfig), the libcurl HTTP client, and the
 * coordination.k8s.io/v1 Lease codec. Only the ha/k8s sources and their unit tests include it.
 */
#ifndef CRESCENT_HA_K8S_HA_K8S_H
#define CRESCENT_HA_K8S_HA_K8S_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "common/cm_buf.h"

/* ------------------------------------------------------------------------------------------ */
/* Configuration (ha_k8s_config.c)                                                             */
/* ------------------------------------------------------------------------------------------ */

/*
 * How to reach and authenticate to the API server. Each credential is either a file path or
 * inline bytes (decoded from a kubeconfig *-data field); never both. Strings are owned (cm_*)
 * and freed by ha_k8s__config_fini().
 */
struct ha_k8s_config {
    char *server;  /* "https://host:port", no trailing slash */
    char *ca_file; /* PEM CA bundle path, or NULL */
    char *ca_data; /* PEM CA bytes, or NULL */
    size_t ca_len;
    char *cert_file; /* client certificate path (PEM), or NULL */
    char *cert_data; /* client certificate bytes, or NULL */
    size_t cert_len;
    char *key_file; /* client key path (PEM), or NULL */
    char *key_data; /* client key bytes, or NULL */
    size_t key_len;
    char *token;      /* bearer token, or NULL */
    char *namespace_; /* namespace from the context / service account, or NULL */
    bool insecure;    /* insecure-skip-tls-verify: true in the kubeconfig */
    char source[512]; /* where it came from, for messages: "in-cluster", "kubeconfig PATH" */
};

/* Frees every owned string of c and zeroes it. c may be zeroed already. */
void ha_k8s__config_fini(struct ha_k8s_config *c);

/*
 * Parses kubeconfig YAML text (len bytes) into *out using its current-context; relative file
 * paths are resolved against base_dir (the kubeconfig's directory; may be NULL for "."). Returns
 * 0, or -CM_EBAD_URI / -CM_EPROTOCOL with a one-line message in err. *out must be zeroed; on error
 * it is finalized. Pure (no I/O apart from reading a user.tokenFile). Thread-safe.
 */
int ha_k8s__kubeconfig_parse(const char *text, size_t len, const char *base_dir,
                             struct ha_k8s_config *out, char *err, size_t errlen);

/*
 * Loads the configuration: $KUBECONFIG (first file of the list) when set; else the in-cluster
 * service account when KUBERNETES_SERVICE_HOST is set and its token file exists; else
 * ~/.kube/config. The service-account directory defaults to
 * /var/run/secrets/kubernetes.io/serviceaccount and can be overridden with
 * $CRESCENT_K8S_SA_DIR (tests). Returns 0, or a negative code with a message in err; *out
 * must be zeroed. Not thread-safe (reads the environment).
 */
int ha_k8s__config_load(struct ha_k8s_config *out, char *err, size_t errlen);

/*
 * Decodes standard base64 (padding optional, whitespace ignored) from in[0..len) into a new
 * NUL-terminated buffer (caller frees with cm_free) and sets *outlen. Returns 0 or -EINVAL.
 */
int ha_k8s__base64_decode(const char *in, size_t len, char **out, size_t *outlen);

/* ------------------------------------------------------------------------------------------ */
/* HTTP (ha_k8s_http.c)                                                                        */
/* ------------------------------------------------------------------------------------------ */

struct ha_k8s_http; /* one libcurl easy handle plus the credentials; not thread-safe */

/*
 * Creates an HTTP client for cfg (which must outlive it). Every request is bounded by
 * timeout_ms. Returns 0 and *out, or a negative code. Caller frees with ha_k8s__http_destroy.
 */
int ha_k8s__http_create(const struct ha_k8s_config *cfg, int timeout_ms, struct ha_k8s_http **out,
                        char *err, size_t errlen);

/* Frees h (NULL is fine). */
void ha_k8s__http_destroy(struct ha_k8s_http *h);

/*
 * Bounds the following requests by the CLOCK_MONOTONIC instant deadline_ms (0 = only the
 * per-request timeout): a request is given min(timeout, time left), and fails with -ETIMEDOUT
 * once the deadline has passed. Used so that one backend operation of several requests stays
 * within the elector's budget.
 */
void ha_k8s__http_set_deadline(struct ha_k8s_http *h, uint64_t deadline_ms);

/*
 * Performs one request: method on server+path with an optional JSON body. On a completed
 * exchange returns 0 with *status set and the body in resp (cleared first); the caller
 * interprets the status, except 401/403 (returns -CM_EAUTH with "kubernetes API: 401
 * Unauthorized: check the service-account token") and 5xx/429 (-CM_EUNREACHABLE). Transport
 * failures return -CM_EUNREACHABLE (connect, DNS, timeout) or -CM_EAUTH (TLS verification).
 * err gets one line for every negative return.
 */
int ha_k8s__http_request(struct ha_k8s_http *h, const char *method, const char *path,
                         const char *body, long *status, struct cm_buf *resp, char *err,
                         size_t errlen);

/*
 * Event callback of a streaming request: called for each complete line of the body; return
 * true to stop the stream.
 */
typedef bool ha_k8s_line_cb(void *arg, const char *line, size_t len);

/*
 * Streams GET path (a watch) until line_cb asks to stop (returns 1), the server closes the
 * stream (returns 0) or timeout_ms passes (-ETIMEDOUT). HTTP errors are reported as in
 * ha_k8s__http_request; a plain HTTP 410 (the resourceVersion left the watch window) returns
 * -ESTALE, any other non-200 status -CM_EPROTOCOL. Uses its own easy handle.
 */
int ha_k8s__http_stream(struct ha_k8s_http *h, const char *path, int timeout_ms,
                        ha_k8s_line_cb *line_cb, void *arg, char *err, size_t errlen);

/* ------------------------------------------------------------------------------------------ */
/* Lease codec (ha_k8s_lease.c)                                                                */
/* ------------------------------------------------------------------------------------------ */

/* A decoded coordination.k8s.io/v1 Lease. obj keeps the whole object so that updates
 * preserve fields we do not model (labels, annotations, owner references). */
struct ha_k8s_lease {
    char name[254];
    char namespace_[64];
    char resource_version[64];
    char uid[64];
    char holder[256];      /* spec.holderIdentity, "" when absent */
    int64_t duration_s;    /* spec.leaseDurationSeconds, 0 when absent */
    int64_t transitions;   /* spec.leaseTransitions, 0 when absent */
    char acquire_time[40]; /* spec.acquireTime as sent, "" when absent */
    char renew_time[40];   /* spec.renewTime as sent, "" when absent */
    int64_t epoch_note;    /* metadata.annotations[HA_K8S_EPOCH_ANNOTATION], 0 when absent */
    json_t *obj;           /* owned reference to the whole object, or NULL */
};

/* The annotation that holds the epoch of the current (or last) holder: the epoch is
   max(this, spec.leaseTransitions), so Leases written by other tools still read right. */
#define HA_K8S_EPOCH_ANNOTATION "crescent.io/epoch"

/* Releases l->obj and zeroes l. */
void ha_k8s__lease_fini(struct ha_k8s_lease *l);

/*
 * Decodes a Lease from JSON text (len bytes) into *out (finalized first if it holds an object).
 * Returns 0, or -CM_EPROTOCOL with a message when the text is not a Lease. Thread-safe.
 */
int ha_k8s__lease_decode(const char *text, size_t len, struct ha_k8s_lease *out, char *err,
                         size_t errlen);

/* As ha_k8s__lease_decode but from a parsed object (borrowed; a reference is taken). */
int ha_k8s__lease_from_json(json_t *obj, struct ha_k8s_lease *out, char *err, size_t errlen);

/*
 * Encodes l as JSON text for a POST or PUT: a copy of l->obj (or a fresh object) with
 * apiVersion, kind, metadata.name/namespace, metadata.resourceVersion (when non-empty), the
 * epoch annotation (when epoch_note > 0) and the spec fields of l. Empty holder, acquire_time or
 * renew_time drop the field; a zero duration_s drops leaseDurationSeconds. Returns a string the
 * caller frees with free().
 */
char *ha_k8s__lease_encode(const struct ha_k8s_lease *l);

/*
 * Reads a Kubernetes Status object: copies .reason and .message (either may be NULL).
 * Returns 0, or -CM_EPROTOCOL when text is not a Status.
 */
int ha_k8s__status_decode(const char *text, size_t len, char *reason, size_t reasonlen,
                          char *message, size_t messagelen);

/* Formats wall_us (Unix microseconds) as a MicroTime: "2026-11-30T10:00:00.000000Z". */
void ha_k8s__format_micro_time(uint64_t wall_us, char *buf, size_t buflen);

/*
 * Parses an RFC 3339 time ("...Z" or "+hh:mm" offsets, optional fraction) into Unix
 * microseconds. Returns 0 or -EINVAL.
 */
int ha_k8s__parse_time(const char *s, int64_t *wall_us);

#endif
