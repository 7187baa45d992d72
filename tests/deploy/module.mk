# tests/deploy/: the deployment files. k8s_rbac.sh checks deploy/k8s (Role verbs against the
# requests the Kubernetes Lease backend makes to the API double, flags against --help, probes);
# systemd.sh checks deploy/systemd (units, their binaries and flags, systemd-analyze verify when
# systemd is there).
TEST_SCRIPTS += tests/deploy/k8s_rbac.sh tests/deploy/systemd.sh
