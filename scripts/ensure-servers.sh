#!/usr/bin/env bash
# Makes sure the server binaries the store tests start privately are installed:
# PostgreSQL, MariaDB, Redis, etcd, ZooKeeper and Ceph's S3 gateway (radosgw); nats-server for NATS;
# the spin model checker (with gcc) for the protocol model; Chromium for the dashboard's browser test;
# iproute2 and unshare for the lab's network namespaces; jq for a docs example.
# Installs missing Debian packages when it can (root with apt-get); otherwise says what is missing.
# The tests never use the system's running instances: they start their own on free loopback ports.
set -u
missing=()
have_pg() { ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; }
have_pg || missing+=(postgresql)
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v radosgw >/dev/null 2>&1 || missing+=(radosgw)
command -v ceph-mon >/dev/null 2>&1 || missing+=(ceph-mon)
command -v ceph-osd >/dev/null 2>&1 || missing+=(ceph-osd)
command -v nats-server >/dev/null 2>&1 || missing+=(nats-server)
command -v spin >/dev/null 2>&1 || missing+=(spin)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# The lab's network namespaces (test/verify/lab.test.ts, npm run bench:jepsen): ip and unshare.
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
# jq, which a docs example pipes `leasehold watch --json` into (test/docs/docs.test.ts runs it).
command -v jq >/dev/null 2>&1 || missing+=(jq)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "leasehold: installing server packages for the store tests: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || {
    echo "leasehold: could not install ${missing[*]}" >&2
    exit 1
  }
else
  echo "leasehold: missing server packages ${missing[*]}: their store tests will be skipped (and fail under CI=1)" >&2
fi
