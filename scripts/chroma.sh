#!/usr/bin/env bash
# A REAL Chroma server on 127.0.0.1:$CHROMAPORT for the Chroma store's tests:
# the chromadb npm package's `chroma run`, which is Chroma's own Rust server
# (single node, SQLite and HNSW) in a native Node.js binding. The binding wants
# glibc 2.38 and Debian 12 has 2.36, so Node runs under the dynamic loader and
# glibc of a Debian trixie root: the PostgreSQL chroot's (scripts/pg-pgvector.sh)
# when it is there, else a minimal one made here.
#   source it:   . chroma.sh; chroma_up; ...tests...; chroma_down
#   chroma_up exports QUARRY_TEST_CHROMA (chroma://127.0.0.1:PORT).
# Fresh machine: ~15 s for npm (plus ~60 s of debootstrap without the
# PostgreSQL chroot); later runs reuse both: ~3 s.
set -euo pipefail
CHROMA_NPM=${CHROMA_NPM:-3.5.0} # chromadb on npm; it pins chromadb-js-bindings 1.3.4
CHROMADIR=${CHROMADIR:-/var/cache/quarry/chroma-npm-$CHROMA_NPM}
CHROMAROOT=${CHROMAROOT:-${PGROOT:-/tmp/pgvector-trixie}}
CHROMAPORT=${CHROMAPORT:-58000}
CHROMADATA=${CHROMADATA:-/tmp/quarry-chroma-data}
CHROMAMIRROR=${CHROMAMIRROR:-http://deb.debian.org/debian}

chroma_up() {
  local cli="$CHROMADIR/node_modules/chromadb/dist/cli.mjs"
  if [ ! -f "$cli" ]; then
    command -v npm >/dev/null || { apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null; }
    rm -rf "$CHROMADIR"; mkdir -p "$CHROMADIR"
    (cd "$CHROMADIR" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "chromadb@$CHROMA_NPM")
  fi
  if [ ! -x "$CHROMAROOT/lib64/ld-linux-x86-64.so.2" ]; then
    command -v debootstrap >/dev/null || { apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; }
    rm -rf "$CHROMAROOT"
    debootstrap --variant=minbase trixie "$CHROMAROOT" "$CHROMAMIRROR" >/tmp/chroma-debootstrap.log 2>&1 \
      || { tail -20 /tmp/chroma-debootstrap.log; return 1; }
  fi
  chroma_down
  rm -rf "$CHROMADATA"
  local libs="$CHROMAROOT/lib/x86_64-linux-gnu:$CHROMAROOT/usr/lib/x86_64-linux-gnu"
  setsid "$CHROMAROOT/lib64/ld-linux-x86-64.so.2" --library-path "$libs" "$(command -v node)" "$cli" \
    run --path "$CHROMADATA" --port "$CHROMAPORT" >/tmp/quarry-chroma.log 2>&1 </dev/null &
  echo $! >/tmp/quarry-chroma.pid
  disown $!
  for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$CHROMAPORT/api/v2/heartbeat" >/dev/null 2>&1 && break
    sleep 0.5
  done
  curl -sf "http://127.0.0.1:$CHROMAPORT/api/v2/heartbeat" >/dev/null || { echo "chroma did not start:"; tail -20 /tmp/quarry-chroma.log; return 1; }
  export QUARRY_TEST_CHROMA="chroma://127.0.0.1:$CHROMAPORT"
  echo "chroma up: $QUARRY_TEST_CHROMA (server $(curl -s "http://127.0.0.1:$CHROMAPORT/api/v2/version"), npm chromadb $CHROMA_NPM)"
}

# chroma_down stops the server. It is killed outright: on SIGTERM it logs
# that it is shutting down and may keep the port for a long while.
chroma_down() {
  if [ -f /tmp/quarry-chroma.pid ]; then
    kill -9 "$(cat /tmp/quarry-chroma.pid)" 2>/dev/null || true
    rm -f /tmp/quarry-chroma.pid
  fi
  pkill -9 -f "chromadb/dist/cli.mjs run --path $CHROMADATA" 2>/dev/null || true
  for _ in $(seq 1 20); do
    curl -s -m 1 "http://127.0.0.1:$CHROMAPORT/api/v2/heartbeat" >/dev/null 2>&1 || return 0
    sleep 0.25
  done
}
