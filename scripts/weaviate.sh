#!/usr/bin/env bash
# Weaviate for Quarry's integration tests, without Docker: the server is
# built from the Go module proxy once (about 7 minutes on an idle 2-core
# machine, 35 on a busy one) and cached by version; nodes run on loopback.
#
#   . scripts/weaviate.sh
#   weaviate_up 1      one node on :8081; exports QUARRY_TEST_WEAVIATE_URL
#   weaviate_up 3      three nodes on :8091-8093 (one Raft cluster); exports
#                      QUARRY_TEST_WEAVIATE_CLUSTER_URL (3 shards, 3 replicas);
#                      the node-failure test also wants QUARRY_TEST_WEAVIATE_ROOT=$WVROOT
#                      (it kills nodes, so nothing else may use the cluster meanwhile)
#   weaviate_kill N    SIGKILL node N of the cluster (1-3)
#   weaviate_start N   start node N of the cluster again
#   weaviate_down      stop every node this script started
#
# Replicas compare their contents every 5 s and hand on writes older than 1 s
# (Weaviate's defaults: 30 s and 30 s), so
# a node that was down catches up within a test's patience.
# Sourcing turns on set -euo pipefail. WEAVIATE_VERSION, WEAVIATE_CACHE and
# WVROOT (data and logs) can be set before sourcing.
set -euo pipefail
WEAVIATE_VERSION=${WEAVIATE_VERSION:-v1.35.2}
WEAVIATE_CACHE=${WEAVIATE_CACHE:-/var/cache/quarry}
WEAVIATE_BIN="$WEAVIATE_CACHE/weaviate-$WEAVIATE_VERSION/weaviate-server"
WVROOT=${WVROOT:-/tmp/quarry-weaviate}

weaviate_build() {
  if [ -x "$WEAVIATE_BIN" ]; then return 0; fi
  local dir; dir=$(dirname "$WEAVIATE_BIN")
  mkdir -p "$dir"
  local s=$SECONDS
  # Outside any module, with no -mod flag: `go install pkg@version` builds
  # the server with its own go.mod.
  (cd /tmp && GOFLAGS= GOBIN="$dir.partial" go install -trimpath -ldflags="-s -w" \
    "github.com/weaviate/weaviate/cmd/weaviate-server@$WEAVIATE_VERSION") >"$WVROOT-build.log" 2>&1 \
    || { tail -20 "$WVROOT-build.log"; return 1; }
  mv "$dir.partial/weaviate-server" "$WEAVIATE_BIN"
  rmdir "$dir.partial" 2>/dev/null || true
  echo "built weaviate-server $WEAVIATE_VERSION in $((SECONDS - s)) s"
}

# _weaviate_node NAME HTTP GOSSIP DATA RAFT RAFTRPC GRPC BOOTSTRAP JOIN RAFTJOIN
# (the profiling port is the gRPC port less 3000, so nodes do not share one).
# Every port is below 32768, outside Linux's ephemeral range (32768–60999):
# a node restarted in a test once failed to bind gRPC on 50062 because an
# outgoing connection had been given that port as its local one.
_weaviate_node() {
  local name=$1 http=$2 gossip=$3 data=$4 raft=$5 rpc=$6 grpc=$7 expect=$8 join=$9 raftjoin=${10}
  mkdir -p "$WVROOT/$name"
  env PERSISTENCE_DATA_PATH="$WVROOT/$name/data" \
    AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true DEFAULT_VECTORIZER_MODULE=none DISABLE_TELEMETRY=true \
    LIMIT_RESOURCES=true GOMAXPROCS=2 ASYNC_REPLICATION_FREQUENCY=5s ASYNC_REPLICATION_PROPAGATION_DELAY=1s MEMTABLES_FLUSH_DIRTY_AFTER_SECONDS=5 \
    CLUSTER_HOSTNAME="$name" CLUSTER_ADVERTISE_ADDR=127.0.0.1 CLUSTER_IN_LOCALHOST=true \
    CLUSTER_GOSSIP_BIND_PORT="$gossip" CLUSTER_DATA_BIND_PORT="$data" CLUSTER_JOIN="$join" \
    RAFT_PORT="$raft" RAFT_INTERNAL_RPC_PORT="$rpc" RAFT_JOIN="$raftjoin" RAFT_BOOTSTRAP_EXPECT="$expect" \
    GRPC_PORT="$grpc" GO_PROFILING_PORT=$((grpc - 3000)) \
    setsid "$WEAVIATE_BIN" --host 127.0.0.1 --port "$http" --scheme http >"$WVROOT/$name/log" 2>&1 &
  echo $! >"$WVROOT/$name/pid"
  local i
  for i in $(seq 1 240); do
    if curl -sf "http://127.0.0.1:$http/v1/.well-known/ready" >/dev/null; then return 0; fi
    if ! kill -0 "$(cat "$WVROOT/$name/pid")" 2>/dev/null; then
      echo "weaviate node $name died:"; tail -20 "$WVROOT/$name/log"; return 1
    fi
    sleep 0.5
  done
  echo "weaviate node $name not ready after 120 s:"; tail -20 "$WVROOT/$name/log"; return 1
}

# _cluster_node N [rejoin]: node N (1-3) of the three-node cluster. A node
# started again joins through the other two, since any of them may be the
# one still up.
_cluster_node() {
  local n=$1 join=""
  [ "$n" -gt 1 ] && join=127.0.0.1:7210
  if [ "${2:-}" = rejoin ]; then
    local m
    join=""
    for m in 1 2 3; do [ "$m" != "$n" ] && join="$join${join:+,}127.0.0.1:$((7200 + 10 * m))"; done
  fi
  _weaviate_node "c$n" $((8090 + n)) $((7200 + 10 * n)) $((7201 + 10 * n)) $((8400 + 10 * n)) $((8401 + 10 * n)) $((9060 + n)) 3 \
    "$join" "c1:8410,c2:8420,c3:8430"
}

weaviate_up() {
  local nodes=${1:-1}
  command -v curl >/dev/null || { apt-get update -q >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -q curl >/dev/null; }
  weaviate_build
  mkdir -p "$WVROOT"
  local s=$SECONDS
  if [ "$nodes" = 1 ]; then
    rm -rf "$WVROOT/node1"
    _weaviate_node node1 8081 7110 7111 8310 8311 9051 1 "" node1:8310
    QUARRY_TEST_WEAVIATE_URL="weaviate://127.0.0.1:8081"
    export QUARRY_TEST_WEAVIATE_URL
    echo "weaviate up: $QUARRY_TEST_WEAVIATE_URL ($((SECONDS - s)) s)"
  else
    rm -rf "$WVROOT"/c1 "$WVROOT"/c2 "$WVROOT"/c3
    # One after another: a node joins through the first one's gossip port.
    # Nodes 2 and 3 report ready only once the Raft cluster has formed, so
    # they start in the background and are waited for together.
    _cluster_node 1 &
    local p1=$!
    sleep 2
    _cluster_node 2 &
    local p2=$!
    sleep 2
    _cluster_node 3
    wait $p1 $p2
    QUARRY_TEST_WEAVIATE_CLUSTER_URL="weaviate://127.0.0.1:8091?shards=3&replicas=3"
    export QUARRY_TEST_WEAVIATE_CLUSTER_URL
    echo "weaviate cluster up: $QUARRY_TEST_WEAVIATE_CLUSTER_URL ($((SECONDS - s)) s)"
  fi
}

weaviate_kill() { kill -9 "$(cat "$WVROOT/c$1/pid")" 2>/dev/null || true; }
weaviate_start() { _cluster_node "$1" rejoin; }

weaviate_down() {
  local f
  for f in "$WVROOT"/*/pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
  done
  for f in "$WVROOT"/*/pid; do
    [ -f "$f" ] || continue
    local i
    for i in $(seq 1 40); do kill -0 "$(cat "$f")" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run directly: bring up one node, show its version, stop it
  trap weaviate_down EXIT
  weaviate_up 1
  curl -s http://127.0.0.1:8081/v1/meta | head -c 200; echo
fi
