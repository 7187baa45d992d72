/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coordination.k8s.io/v1 Lease codec with jansson: decode a Lease (metadata and spec), encode
 * one for POST/PUT while preserving fields we do not model, read Status objects, and format and
 * parse the MicroTime timestamps of the spec. Pure: no I/O.
 */
#include "common/fmacros.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cm_errno.h"
#include "ha/k8s/ha_k8s.h"

static void copy_str(char *dst, size_t dstlen, const char *src) {
    if (dstlen == 0)
        return;
    snprintf(dst, dstlen, "%s", src ? src : "");
}

static const char *obj_str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Releases l->obj and zeroes l. */
void ha_k8s__lease_fini(struct ha_k8s_lease *l) {
    if (l->obj)
        json_decref(l->obj);
    memset(l, 0, sizeof(*l));
}

/* Decodes a Lease from a parsed object; takes a new reference on obj. See ha_k8s.h. */
int ha_k8s__lease_from_json(json_t *obj, struct ha_k8s_lease *out, char *err, size_t errlen) {
    ha_k8s__lease_fini(out);
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "kubernetes API: expected a Lease object");
        return -CM_EPROTOCOL;
    }
    const char *kind = obj_str(obj, "kind");
    if (kind && strcmp(kind, "Lease") != 0) {
        snprintf(err, errlen, "kubernetes API: expected kind Lease, got %s", kind);
        return -CM_EPROTOCOL;
    }
    json_t *md = json_object_get(obj, "metadata");
    if (!json_is_object(md) || !obj_str(md, "name")) {
        snprintf(err, errlen, "kubernetes API: Lease without metadata.name");
        return -CM_EPROTOCOL;
    }
    copy_str(out->name, sizeof(out->name), obj_str(md, "name"));
    copy_str(out->namespace_, sizeof(out->namespace_), obj_str(md, "namespace"));
    copy_str(out->resource_version, sizeof(out->resource_version), obj_str(md, "resourceVersion"));
    copy_str(out->uid, sizeof(out->uid), obj_str(md, "uid"));
    const char *note = obj_str(json_object_get(md, "annotations"), HA_K8S_EPOCH_ANNOTATION);
    if (note) {
        char *end;
        errno = 0;
        long long v = strtoll(note, &end, 10);
        if (!*note || *end || errno || v < 0) {
            snprintf(err, errlen, "kubernetes API: Lease annotation %s is not an epoch: \"%s\"",
                     HA_K8S_EPOCH_ANNOTATION, note);
            return -CM_EPROTOCOL;
        }
        out->epoch_note = v;
    }
    json_t *spec = json_object_get(obj, "spec");
    if (spec && !json_is_object(spec) && !json_is_null(spec)) {
        snprintf(err, errlen, "kubernetes API: Lease spec is not an object");
        return -CM_EPROTOCOL;
    }
    if (json_is_object(spec)) {
        copy_str(out->holder, sizeof(out->holder), obj_str(spec, "holderIdentity"));
        json_t *d = json_object_get(spec, "leaseDurationSeconds");
        json_t *t = json_object_get(spec, "leaseTransitions");
        if ((d && !json_is_integer(d) && !json_is_null(d)) ||
            (t && !json_is_integer(t) && !json_is_null(t))) {
            snprintf(err, errlen, "kubernetes API: Lease spec has a non-integer field");
            return -CM_EPROTOCOL;
        }
        out->duration_s = json_is_integer(d) ? json_integer_value(d) : 0;
        out->transitions = json_is_integer(t) ? json_integer_value(t) : 0;
        copy_str(out->acquire_time, sizeof(out->acquire_time), obj_str(spec, "acquireTime"));
        copy_str(out->renew_time, sizeof(out->renew_time), obj_str(spec, "renewTime"));
    }
    out->obj = json_incref(obj);
    return 0;
}

/* Decodes a Lease from JSON text. See ha_k8s.h. */
int ha_k8s__lease_decode(const char *text, size_t len, struct ha_k8s_lease *out, char *err,
                         size_t errlen) {
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root) {
        ha_k8s__lease_fini(out);
        snprintf(err, errlen, "kubernetes API: bad JSON: %s", jerr.text);
        return -CM_EPROTOCOL;
    }
    int rc = ha_k8s__lease_from_json(root, out, err, errlen);
    json_decref(root);
    return rc;
}

static void set_or_del(json_t *o, const char *key, json_t *v) {
    if (v)
        json_object_set_new(o, key, v);
    else
        json_object_del(o, key);
}

/* Encodes l for POST/PUT; caller frees the string with free(). See ha_k8s.h. */
char *ha_k8s__lease_encode(const struct ha_k8s_lease *l) {
    json_t *o = l->obj ? json_deep_copy(l->obj) : json_object();
    json_object_set_new(o, "apiVersion", json_string("coordination.k8s.io/v1"));
    json_object_set_new(o, "kind", json_string("Lease"));
    json_t *md = json_object_get(o, "metadata");
    if (!json_is_object(md)) {
        md = json_object();
        json_object_set_new(o, "metadata", md);
    }
    json_object_set_new(md, "name", json_string(l->name));
    if (l->namespace_[0])
        json_object_set_new(md, "namespace", json_string(l->namespace_));
    set_or_del(md, "resourceVersion",
               l->resource_version[0] ? json_string(l->resource_version) : NULL);
    json_object_del(md, "managedFields");
    if (l->epoch_note > 0) {
        json_t *notes = json_object_get(md, "annotations");
        if (!json_is_object(notes)) {
            notes = json_object();
            json_object_set_new(md, "annotations", notes);
        }
        char v[32];
        snprintf(v, sizeof(v), "%lld", (long long)l->epoch_note);
        json_object_set_new(notes, HA_K8S_EPOCH_ANNOTATION, json_string(v));
    }
    json_t *spec = json_object_get(o, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(o, "spec", spec);
    }
    set_or_del(spec, "holderIdentity", l->holder[0] ? json_string(l->holder) : NULL);
    set_or_del(spec, "leaseDurationSeconds",
               l->duration_s > 0 ? json_integer(l->duration_s) : NULL);
    set_or_del(spec, "acquireTime", l->acquire_time[0] ? json_string(l->acquire_time) : NULL);
    set_or_del(spec, "renewTime", l->renew_time[0] ? json_string(l->renew_time) : NULL);
    json_object_set_new(spec, "leaseTransitions", json_integer(l->transitions));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* Reads reason and message of a Status object. See ha_k8s.h. */
int ha_k8s__status_decode(const char *text, size_t len, char *reason, size_t reasonlen,
                          char *message, size_t messagelen) {
    json_t *root = json_loadb(text, len, 0, NULL);
    const char *kind = root ? obj_str(root, "kind") : NULL;
    int rc = -CM_EPROTOCOL;
    if (kind && strcmp(kind, "Status") == 0) {
        if (reason)
            copy_str(reason, reasonlen, obj_str(root, "reason"));
        if (message)
            copy_str(message, messagelen, obj_str(root, "message"));
        rc = 0;
    }
    if (root)
        json_decref(root);
    return rc;
}

/* Formats a MicroTime. See ha_k8s.h. */
void ha_k8s__format_micro_time(uint64_t wall_us, char *buf, size_t buflen) {
    time_t secs = (time_t)(wall_us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(buf, buflen, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(wall_us % 1000000));
}

static int parse_digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return -EINVAL;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int expect(const char **p, char c) {
    if (**p != c)
        return -EINVAL;
    (*p)++;
    return 0;
}

/* Parses an RFC 3339 time into Unix microseconds. See ha_k8s.h. */
int ha_k8s__parse_time(const char *s, int64_t *wall_us) {
    struct tm tm = {0};
    int y, mo, d, h, mi, sec;
    const char *p = s;
    if (parse_digits(&p, 4, &y) || expect(&p, '-') || parse_digits(&p, 2, &mo) || expect(&p, '-') ||
        parse_digits(&p, 2, &d) || (*p != 'T' && *p != 't'))
        return -EINVAL;
    p++;
    if (parse_digits(&p, 2, &h) || expect(&p, ':') || parse_digits(&p, 2, &mi) || expect(&p, ':') ||
        parse_digits(&p, 2, &sec))
        return -EINVAL;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -EINVAL;
    int64_t frac_us = 0;
    if (*p == '.') {
        p++;
        int digits = 0;
        while (*p >= '0' && *p <= '9') {
            if (digits < 6)
                frac_us = frac_us * 10 + (*p - '0');
            digits++;
            p++;
        }
        if (digits == 0)
            return -EINVAL;
        for (; digits < 6; digits++)
            frac_us *= 10;
    }
    int64_t offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (parse_digits(&p, 2, &oh) || expect(&p, ':') || parse_digits(&p, 2, &om))
            return -EINVAL;
        offset_s = sign * (oh * 3600 + om * 60);
    } else {
        return -EINVAL;
    }
    if (*p != '\0')
        return -EINVAL;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *wall_us = ((int64_t)t - offset_s) * 1000000 + frac_us;
    return 0;
}
