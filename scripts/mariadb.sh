#!/usr/bin/env bash
# MariaDB 11.8 (Debian trixie's mariadb-server, with VECTOR and its HNSW index) in a chroot under
# $MDBROOT, listening on 127.0.0.1:$MDBPORT, user quarry without a password, database quarry.
#   source it:   . scripts/mariadb.sh; mariadb_up; ...tests...; mariadb_down
#   mariadb_up exports QUARRY_TEST_MARIADB_DSN.
# Fresh machine: ~2 min (debootstrap incl. mariadb-server); later runs reuse the chroot: ~3 s.
set -euo pipefail
MDBROOT=${MDBROOT:-/tmp/mariadb-trixie}
MDBPORT=${MDBPORT:-53306}
MDBMIRROR=${MDBMIRROR:-http://deb.debian.org/debian}
MARIADB_DSN="mariadb://quarry@127.0.0.1:${MDBPORT}/quarry"

mariadb_up() {
  if [ ! -x "$MDBROOT/usr/sbin/mariadbd" ]; then
    command -v debootstrap >/dev/null || { apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; }
    rm -rf "$MDBROOT"
    debootstrap --variant=minbase --include=mariadb-server trixie "$MDBROOT" "$MDBMIRROR" >/tmp/mariadb-debootstrap.log 2>&1 \
      || { tail -20 /tmp/mariadb-debootstrap.log; return 1; }
    rm -rf "$MDBROOT/var/cache/apt/archives/"*.deb
  fi
  mountpoint -q "$MDBROOT/proc" || mount -t proc proc "$MDBROOT/proc"
  mariadb_stop
  rm -rf "$MDBROOT/var/tmp/mdb"; mkdir -p "$MDBROOT/var/tmp/mdb"
  chroot "$MDBROOT" chown mysql:mysql /var/tmp/mdb
  chroot "$MDBROOT" mariadb-install-db --user=mysql --datadir=/var/tmp/mdb/data --auth-root-authentication-method=normal --force \
    --skip-test-db >/tmp/mariadb-install.log 2>&1 || { tail -20 /tmp/mariadb-install.log; return 1; }
  # Quarry indexes its own analyzer's terms, so the server's full-text stop words and minimum
  # word length are left as they are: the defaults every server has.
  chroot "$MDBROOT" runuser -u mysql -- /usr/sbin/mariadbd --datadir=/var/tmp/mdb/data --port="$MDBPORT" \
    --bind-address=127.0.0.1 --socket=/var/tmp/mdb/sock --pid-file=/var/tmp/mdb/pid --skip-name-resolve \
    --innodb-flush-log-at-trx-commit=2 --innodb-buffer-pool-size=256M --max-connections=200 \
    --log-error=/var/tmp/mdb/error.log >/dev/null 2>&1 &
  for _ in $(seq 1 60); do
    [ -S "$MDBROOT/var/tmp/mdb/sock" ] && chroot "$MDBROOT" mariadb --socket=/var/tmp/mdb/sock -uroot -e "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.5
  done
  chroot "$MDBROOT" mariadb --socket=/var/tmp/mdb/sock -uroot -e \
    "CREATE USER IF NOT EXISTS 'quarry'@'%'; GRANT ALL ON *.* TO 'quarry'@'%' WITH GRANT OPTION; CREATE DATABASE IF NOT EXISTS quarry;"
  QUARRY_TEST_MARIADB_DSN=$MARIADB_DSN
  export MDBPORT QUARRY_TEST_MARIADB_DSN
  echo "mariadb up: $MARIADB_DSN ($(chroot "$MDBROOT" mariadb --socket=/var/tmp/mdb/sock -uroot -N -e 'SELECT VERSION()'))"
}

mariadb_stop() {
  if [ -f "$MDBROOT/var/tmp/mdb/pid" ]; then
    kill "$(cat "$MDBROOT/var/tmp/mdb/pid")" 2>/dev/null || true
    for _ in $(seq 1 60); do [ -f "$MDBROOT/var/tmp/mdb/pid" ] || break; sleep 0.5; done
  fi
}

mariadb_down() {
  mariadb_stop
  mountpoint -q "$MDBROOT/proc" && umount "$MDBROOT/proc" || true
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then   # run directly: bring up, smoke-test, tear down
  trap mariadb_down EXIT
  s=$(date +%s); mariadb_up; echo "setup took $(( $(date +%s)-s )) s"
  chroot "$MDBROOT" mariadb --socket=/var/tmp/mdb/sock -uroot quarry -e \
    "CREATE TABLE v (id INT PRIMARY KEY, e VECTOR(2) NOT NULL, VECTOR INDEX (e) DISTANCE=cosine); INSERT INTO v VALUES (1, VEC_FromText('[1,0]')); SELECT id, VEC_DISTANCE_COSINE(e, VEC_FromText('[1,0]')) FROM v ORDER BY 2 LIMIT 1; DROP TABLE v;"
fi
