#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks deploy/k8s/*.yaml (parsed with python3-yaml) for tests/deploy/k8s_rbac.sh.

  check_k8s.py lease DEPLOY_DIR
      prints "NAMESPACE LEASE CLUSTER_ID" from the master StatefulSet's HA flags (after checking
      that the objects fit together)
  check_k8s.py check DEPLOY_DIR REQUEST_LOG MASTER_HELP [CLIENT_HELP]
      the Role's rules against the requests in REQUEST_LOG (the Lease API double's
      --request-log: "METHOD PATH?QUERY" lines): every request is on a Lease of the Role's
      namespace and needs a verb the Role grants, and the Role grants no verb, resource or API
      group the requests do not need; the StatefulSet's and DaemonSet's flags against the
      programs' --help; probes against the admin HTTP ports.
Exit status 0 when everything holds, 1 with one line per failure."""

import glob
import os
import re
import sys
from urllib.parse import parse_qs, urlsplit

import yaml

FAILS = []
HA_MODE_FLAGS = {"rpc_address", "oplog_store", "ha_state_dir"}


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
    return cond


def load(deploy):
    objs = []
    for f in sorted(glob.glob(os.path.join(deploy, "*.yaml"))):
        with open(f) as fh:
            for d in yaml.safe_load_all(fh):
                if d:
                    d["_file"] = os.path.basename(f)
                    objs.append(d)
    return objs


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and
             (name is None or o["metadata"]["name"] == name)]
    if not check(len(found) == 1, "expected one %s%s, found %d" %
                 (kind, " " + name if name else "", len(found))):
        sys.exit(report())
    return found[0]


def flags(args):
    """--name=value / --name value arguments as {name: value}."""
    out, i = {}, 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a[2:].split("=", 1)
            elif i + 1 < len(args) and not args[i + 1].startswith("--"):
                k, v = a[2:], args[i + 1]
                i += 1
            else:
                k, v = a[2:], ""
            out[k] = v
        i += 1
    return out


def master_parts(objs):
    sts = one(objs, "StatefulSet", "crescent-master")
    c = sts["spec"]["template"]["spec"]["containers"][0]
    f = flags(c["args"])
    conn = f.get("ha_backend_connstring", "")
    check(f.get("enable_ha") in ("true", "yes", "1"), "master: --enable_ha is not on")
    check(f.get("ha_backend_type") == "k8s", "master: --ha_backend_type is not k8s")
    check(re.match(r"^[a-z0-9.-]+/[a-z0-9.-]+$", conn) is not None,
          "master: --ha_backend_connstring %r is not NAMESPACE/LEASE" % conn)
    ns, lease = conn.split("/", 1) if "/" in conn else ("", conn)
    return sts, c, f, ns, lease, f.get("cluster_id", "")


def structure(objs):
    sts, c, f, ns, lease, cluster = master_parts(objs)
    role = one(objs, "Role", "crescent-leader-election")
    rb = one(objs, "RoleBinding", "crescent-leader-election")
    sa = one(objs, "ServiceAccount", "crescent-master")
    check(sts["spec"]["replicas"] == 3, "master StatefulSet has %s replicas, not 3"
          % sts["spec"]["replicas"])
    spec = sts["spec"]["template"]["spec"]
    check(spec.get("serviceAccountName") == sa["metadata"]["name"],
          "StatefulSet runs as %r, not the ServiceAccount" % spec.get("serviceAccountName"))
    check(role["metadata"]["namespace"] == ns, "Role is in namespace %r, the Lease in %r"
          % (role["metadata"]["namespace"], ns))
    check(rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": role["metadata"]["name"]}, "RoleBinding roleRef")
    check(rb["metadata"]["namespace"] == ns, "RoleBinding namespace")
    check(rb["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                              "namespace": sa["metadata"]["namespace"]}],
          "RoleBinding subjects: %r" % rb["subjects"])
    for o in objs:
        if o["kind"] != "Namespace":
            check(o["metadata"].get("namespace") == ns, "%s %s (%s) not in namespace %s"
                  % (o["kind"], o["metadata"]["name"], o["_file"], ns))
    # Services select the pods they are for, on ports the pods expose.
    one(objs, "DaemonSet", "crescent-client")
    workloads = [o for o in objs if o["kind"] in ("StatefulSet", "DaemonSet", "Deployment")]
    for svc in [o for o in objs if o["kind"] == "Service"]:
        sel = svc["spec"]["selector"]
        match = [w for w in workloads
                 if all(w["spec"]["template"]["metadata"]["labels"].get(k) == v
                        for k, v in sel.items())]
        if check(len(match) == 1, "Service %s selects %d workloads"
                 % (svc["metadata"]["name"], len(match))):
            ports = {p["containerPort"]: p.get("name")
                     for p in match[0]["spec"]["template"]["spec"]["containers"][0]["ports"]}
            for p in svc["spec"]["ports"]:
                t = p.get("targetPort", p["port"])
                check(t in ports or t in ports.values(), "Service %s port %s: no such container "
                      "port" % (svc["metadata"]["name"], t))
    heads = [o for o in objs if o["kind"] == "Service" and o["spec"].get("clusterIP") == "None"]
    check(sts["spec"]["serviceName"] in [h["metadata"]["name"] for h in heads],
          "StatefulSet serviceName is not a headless Service")
    # Service addresses in flags name Services of these manifests.
    services = {o["metadata"]["name"] for o in objs if o["kind"] == "Service"}
    client = one(objs, "DaemonSet", "crescent-client")["spec"]["template"]["spec"]["containers"][0]
    for v in list(f.values()) + list(flags(client["args"]).values()):
        m = re.search(r"([a-z0-9-]+)\.%s\.svc\.cluster\.local" % re.escape(ns), v)
        if m:
            check(m.group(1) in services, "%r names no Service of the manifests" % v)
    return role, ns, lease, cluster


def probes(container, admin_port, health_path="/health"):
    """The readiness probe asks the admin port for /health; every httpGet probe uses it."""
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    rp = container.get("readinessProbe", {}).get("httpGet")
    check(rp is not None and rp["path"] == health_path, "%s: readiness probe is not GET %s"
          % (container["name"], health_path))
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        hg = container.get(kind, {}).get("httpGet")
        if hg:
            port = ports.get(hg["port"], hg["port"])
            check(port == admin_port, "%s: %s on port %s, the admin HTTP port is %s"
                  % (container["name"], kind, port, admin_port))


def help_flags(path):
    with open(path) as f:
        text = f.read()
    return set(re.findall(r"--([a-z][a-z0-9_-]*)", text))


def verb_of(method, path):
    """(verb, namespace, resource) of a request, as the API server's RequestInfo derives it."""
    u = urlsplit(path)
    q = parse_qs(u.query)
    m = re.match(r"^/apis/(coordination\.k8s\.io)/v1/namespaces/([^/]+)/(leases)(?:/([^/]+))?$",
                 u.path)
    if not m:
        return None, None, u.path, None
    ns, res, name = m.group(2), m.group(3), m.group(4)
    watch = q.get("watch", ["false"])[0] in ("true", "1")
    verb = {"GET": "watch" if watch else ("get" if name else "list"),
            "POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())
    return verb, ns, res, name


def rbac(role, ns, lease, log):
    with open(log) as f:
        reqs = [line.split(" ", 1) for line in f.read().splitlines() if line]
    check(len(reqs) > 0, "the request log is empty")
    used = set()
    for method, path in reqs:
        verb, rns, res, name = verb_of(method, path)
        if not check(verb is not None, "request outside the Lease API: %s %s" % (method, path)):
            continue
        check(rns == ns, "request in namespace %s, not the Role's %s: %s %s"
              % (rns, ns, method, path))
        if name is not None:
            check(name == lease, "request on Lease %s, not %s: %s %s" % (name, lease, method,
                                                                          path))
        used.add(verb)
    rules = role["rules"]
    granted = set()
    for r in rules:
        check(r.get("apiGroups") == ["coordination.k8s.io"], "rule for API groups %r"
              % r.get("apiGroups"))
        check(r.get("resources") == ["leases"], "rule for resources %r" % r.get("resources"))
        check("*" not in r.get("verbs", []), "a wildcard verb")
        granted |= set(r.get("verbs", []))
        if r.get("resourceNames"):
            check("create" not in r["verbs"], "create restricted by resourceNames never matches")
    check(used <= granted, "the backend needs verbs the Role lacks: %s" % sorted(used - granted))
    check(granted <= used, "the Role grants verbs the backend never uses: %s"
          % sorted(granted - used))
    return used, granted


def report():
    for f in FAILS:
        print("FAIL: " + f)
    return 1 if FAILS else 0


def main():
    cmd, deploy = sys.argv[1], sys.argv[2]
    objs = load(deploy)
    role, ns, lease, cluster = structure(objs)
    if cmd == "lease":
        if FAILS:
            return report()
        print(ns, lease, cluster)
        return 0
    log, master_help = sys.argv[3], sys.argv[4]
    client_help = sys.argv[5] if len(sys.argv) > 5 else None
    used, granted = rbac(role, ns, lease, log)
    sts, mc, mf, _, _, _ = master_parts(objs)
    known = help_flags(master_help)
    # A master built before its HA mode (--help calls enable_ha "planned") lacks the HA mode's
    # own flags; they are reported, not failed, until the build has them.
    planned = re.search(r"--enable_ha .*planned", open(master_help).read()) is not None
    for k in mf:
        if k not in known and planned and k in HA_MODE_FLAGS:
            print("note: --%s is not in this crescent-master's --help (its HA mode is planned)"
                  % k)
            continue
        check(k in known, "master flag --%s is not in crescent-master --help" % k)
    probes(mc, int(mf.get("metrics_port", 9003)))
    ds = one(objs, "DaemonSet", "crescent-client")
    cc = ds["spec"]["template"]["spec"]["containers"][0]
    cf = flags(cc["args"])
    for k in ("master", "protocol", "host", "port", "global_segment_size", "local_buffer_size"):
        check(k in cf, "client flag --%s missing" % k)
    check(cf.get("port") == "50052", "client --port is not 50052")
    if client_help:
        known = help_flags(client_help)
        for k in cf:
            check(k in known, "client flag --%s is not in crescent-client --help" % k)
    probes(cc, 9300)
    rc = report()
    if rc == 0:
        print("ok: Role verbs %s == verbs of %d requests the backend made; flags and probes "
              "match" % (sorted(granted), sum(1 for _ in open(log))))
    return rc


if __name__ == "__main__":
    sys.exit(main())
