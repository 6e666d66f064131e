#!/usr/bin/env bash
# Runs real Apache Kafka 4.x nodes (KRaft, each a combined broker + controller) from Maven Central
# jars with the local Java: one node by default (`make up`), or a cluster of KAFKA_NODES nodes for
# the tests that need leaders to move (`make test-cluster`). See ../../README.md "Local stack".
#
#   scripts/kafka/kafka.sh up                 fetch jars (cached), format storage once, start every
#                                             node, wait until each answers and describeCluster lists all
#   scripts/kafka/kafka.sh down               stop every node and remove the data directory
#   scripts/kafka/kafka.sh stop               stop every node, keep the data
#   scripts/kafka/kafka.sh status             exit 0 when every node answers and describeCluster lists all
#   scripts/kafka/kafka.sh brokers            print the bootstrap list, host:port,... (no check)
#   scripts/kafka/kafka.sh jars               fetch the jars, print their directory
#   scripts/kafka/kafka.sh stop-node ID       controlled shutdown (SIGTERM) of node ID, wait until it exited
#   scripts/kafka/kafka.sh kill-node ID       SIGKILL node ID (a crash: no controlled shutdown), wait until gone
#   scripts/kafka/kafka.sh start-node ID      start node ID on its existing data, wait until describeCluster
#                                             lists every node again
#   scripts/kafka/kafka.sh move-leader TOPIC PARTITION ID
#                                             make broker ID the preferred replica of the partition
#                                             (alterPartitionReassignments, same replica set) and elect it
#                                             (electLeaders PREFERRED); see MoveLeader.java
#   scripts/kafka/kafka.sh reassign TOPIC PARTITION ID,ID,...
#                                             make ID,ID,... the partition's replica list and the first
#                                             one its leader (replicas left out are deleted)
#   The node commands act on processes this script started (pid files in the data directory).
#
# One node (KAFKA_NODES unset or 1): node.id 1, internal topics at replication factor 1.
#   KAFKA_PORT             client listener port             (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller listener port   (default 9093)
#   KAFKA_DATA_DIR         log.dirs, pid file, server.log   (default <repo>/.data/kafka)
#   KAFKA_HEAP_OPTS        JVM heap                          (default -Xms256m -Xmx512m)
# A cluster (KAFKA_NODES=3, e.g. `KAFKA_NODES=3 scripts/kafka/kafka.sh up`): node.id 1..N, node i
# listens on KAFKA_CLUSTER_PORT+i-1 and KAFKA_CLUSTER_CONTROLLER_PORT+i-1, keeps its data in
# <data>/node-i; all nodes share one controller.quorum.voters list and one cluster id. Internal
# topics at replication factor min(N, 3) with min.insync.replicas 2. Its ports and data differ from
# the one-node defaults, so both can run at once.
#   KAFKA_CLUSTER_PORT             first client port       (default 19092: 19092, 19093, 19094)
#   KAFKA_CLUSTER_CONTROLLER_PORT  first controller port   (default 19192: 19192, 19193, 19194)
#   KAFKA_CLUSTER_DATA_DIR         data directory          (default <repo>/.data/kafka-cluster)
#   KAFKA_CLUSTER_HEAP_OPTS        JVM heap of each node   (default -Xms128m -Xmx384m)
# For fault tests (test/helpers/faultCluster.ts), clients can be made to reach the nodes through a
# proxy while the nodes talk to each other directly. Both unset: as above, one PLAINTEXT listener
# for clients and brokers alike. Set together:
#   KAFKA_CLUSTER_INTERNAL_PORT    first port of an INTERNAL listener (node i: +i-1) that carries the
#                                  inter-broker traffic and advertises itself
#   KAFKA_CLUSTER_ADVERTISED_PORT  first port the PLAINTEXT (client) listener advertises (node i:
#                                  +i-1), e.g. a fault proxy's; the listener still binds
#                                  KAFKA_CLUSTER_PORT+i-1, where the proxy forwards to
#   Kafka answers metadata with the addresses of the listener a request came in on, so the
#   readiness check, `status` and `move-leader` bootstrap through the INTERNAL ports and work
#   while no proxy runs; clients that bootstrap through the proxies get the proxies' addresses.
#   `brokers` prints the advertised (proxy) list.
# Both:
#   KAFKA_CACHE_DIR        where the jars are cached        (default <repo>/.cache/kafka)
#   KAFKA_READY_TIMEOUT_S  how long `up`/`start-node` wait  (default 90; 180 for a cluster)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
nodes=${KAFKA_NODES:-1}
case "$nodes" in '' | *[!0-9]* | 0) echo "kafka: KAFKA_NODES must be a positive whole number, got '$nodes'" >&2; exit 2 ;; esac
if [ "$nodes" -eq 1 ]; then
  port=${KAFKA_PORT:-9092}
  cport=${KAFKA_CONTROLLER_PORT:-9093}
  data=${KAFKA_DATA_DIR:-$repo/.data/kafka}
  heap=${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}
  timeout_s=${KAFKA_READY_TIMEOUT_S:-90}
  rf=1
  min_isr=1
else
  port=${KAFKA_CLUSTER_PORT:-19092}
  cport=${KAFKA_CLUSTER_CONTROLLER_PORT:-19192}
  data=${KAFKA_CLUSTER_DATA_DIR:-$repo/.data/kafka-cluster}
  heap=${KAFKA_CLUSTER_HEAP_OPTS:--Xms128m -Xmx384m}
  timeout_s=${KAFKA_READY_TIMEOUT_S:-180}
  rf=$((nodes < 3 ? nodes : 3))
  min_isr=2
  iport=${KAFKA_CLUSTER_INTERNAL_PORT:-}
  aport=${KAFKA_CLUSTER_ADVERTISED_PORT:-}
  if [ -n "$iport$aport" ] && { [ -z "$iport" ] || [ -z "$aport" ]; }; then
    echo "kafka: set KAFKA_CLUSTER_INTERNAL_PORT and KAFKA_CLUSTER_ADVERTISED_PORT together, or neither" >&2
    exit 2
  fi
fi
iport=${iport:-}
aport=${aport:-}
cache=${KAFKA_CACHE_DIR:-$repo/.cache/kafka}
jars=$cache/$version

log() { printf 'kafka: %s\n' "$*" >&2; }

# Node i's client port, controller port and directory (the one-node layout is the data dir itself).
client_port() { echo $((port + $1 - 1)); }
controller_port() { echo $((cport + $1 - 1)); }
node_dir() { if [ "$nodes" -eq 1 ]; then echo "$data"; else echo "$data/node-$1"; fi; }
pidfile() { echo "$(node_dir "$1")/kafka.pid"; }

# Node i's INTERNAL and advertised client port (only with KAFKA_CLUSTER_INTERNAL_PORT set).
internal_port() { echo $((iport + $1 - 1)); }
advertised_port() { if [ -n "$aport" ]; then echo $((aport + $1 - 1)); else client_port "$1"; fi; }

# The bootstrap list clients use: the advertised client ports.
brokers() {
  local list="" i
  for i in $(seq 1 "$nodes"); do list="$list${list:+,}127.0.0.1:$(advertised_port "$i")"; done
  echo "$list"
}

# The bootstrap list of this script's own checks and tools: the INTERNAL ports when there are
# some (metadata then names the INTERNAL addresses, reachable without the proxies), else `brokers`.
tool_brokers() {
  if [ -z "$iport" ]; then brokers; return; fi
  local list="" i
  for i in $(seq 1 "$nodes"); do list="$list${list:+,}127.0.0.1:$(internal_port "$i")"; done
  echo "$list"
}

check_id() {
  case "${1:-}" in '' | *[!0-9]*) log "node id must be 1..$nodes, got '${1:-}'"; exit 2 ;; esac
  if [ "$1" -lt 1 ] || [ "$1" -gt "$nodes" ]; then log "node id must be 1..$nodes (KAFKA_NODES=$nodes), got $1"; exit 2; fi
}

fetch_jars() {
  if [ -f "$jars/.complete" ]; then return; fi
  log "fetching Kafka $version jars from Maven Central into $jars"
  mkdir -p "$jars"
  # Maven's output goes to stderr: `kafka.sh jars` prints only the folder (callers capture it).
  # Maven 3.8 prints colour resets even with -Dstyle.color=never: sed takes them out (pipefail
  # keeps Maven's exit status).
  mvn -q -B -Dstyle.color=never -f "$here/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$jars" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2
  ls "$jars"/kafka_2.13-"$version".jar >/dev/null
  touch "$jars/.complete"
}

running() {
  local f; f=$(pidfile "$1")
  [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Exit 0 when every node's client port answers and describeCluster lists all of them.
cluster_answers() {
  local i
  for i in $(seq 1 "$nodes"); do port_open "$(client_port "$i")" || return 1; done
  KAFKA_BROKERS="$(tool_brokers)" KAFKA_SECURITY_PROTOCOL=PLAINTEXT node "$here/wait-ready.mjs" "$1" "$nodes"
}

voters() {
  local list="" i
  for i in $(seq 1 "$nodes"); do list="$list${list:+,}$i@127.0.0.1:$(controller_port "$i")"; done
  echo "$list"
}

write_properties() {
  local id=$1 dir; dir=$(node_dir "$1")
  local p c; p=$(client_port "$id"); c=$(controller_port "$id")
  # group.consumer.*: KIP-848 groups (KAFKA_GROUP_PROTOCOL=consumer) take their session timeout and
  # heartbeat interval from the broker; a local stack notices a member gone in 10 s, not Kafka's 45 s.
  cat >"$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$(voters)
listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$c
advertised.listeners=PLAINTEXT://127.0.0.1:$p
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/logs
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$min_isr
group.initial.rebalance.delay.ms=0
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=10000
group.consumer.min.heartbeat.interval.ms=1000
group.consumer.heartbeat.interval.ms=2000
delete.topic.enable=true
PROPS
  # Fault tests: an INTERNAL listener for the brokers (and this script's checks), the client
  # listener advertised at another port (a proxy's). Edited after the heredoc, which
  # test/unit/deploy/compose.test.ts compares with compose.yaml.
  if [ -n "$iport" ]; then
    local i a; i=$(internal_port "$id"); a=$(advertised_port "$id")
    sed -i -e "s|^listeners=.*|listeners=PLAINTEXT://127.0.0.1:$p,INTERNAL://127.0.0.1:$i,CONTROLLER://127.0.0.1:$c|" \
      -e "s|^advertised.listeners=.*|advertised.listeners=PLAINTEXT://127.0.0.1:$a,INTERNAL://127.0.0.1:$i|" \
      -e "s|^listener.security.protocol.map=.*|&,INTERNAL:PLAINTEXT|" \
      -e "s|^inter.broker.listener.name=.*|inter.broker.listener.name=INTERNAL|" "$dir/server.properties"
  fi
}

jvm() {
  local dir; dir=$(node_dir "$1"); shift
  java -cp "$jars/*" -Dlog4j2.configurationFile="$here/log4j2.properties" -Dkafka.logs.dir="$dir" "$@"
}

# Writes node i's properties and formats its storage unless already formatted (same cluster id).
prepare_node() {
  local id=$1 dir; dir=$(node_dir "$1")
  mkdir -p "$dir"
  write_properties "$id"
  if [ -f "$dir/logs/meta.properties" ]; then return; fi
  jvm "$id" kafka.tools.StorageTool format -t "$(cat "$data/cluster.id")" \
    -c "$dir/server.properties" --ignore-formatted >"$dir/format.log" 2>&1 \
    || { cat "$dir/format.log" >&2; return 1; }
}

# Starts node i in the background (no wait). Refuses a port held by something else.
launch_node() {
  local id=$1 dir; dir=$(node_dir "$1")
  if running "$id"; then return; fi
  local taken
  local ports=("$(client_port "$id")" "$(controller_port "$id")")
  if [ -n "${iport:-}" ]; then ports+=("$(internal_port "$id")"); fi
  for taken in "${ports[@]}"; do
    if port_open "$taken"; then
      log "port $taken of node $id is taken by a process this script did not start; stop it or set the ports (KAFKA_PORT and KAFKA_CONTROLLER_PORT, or KAFKA_CLUSTER_PORT and KAFKA_CLUSTER_CONTROLLER_PORT)"
      exit 1
    fi
  done
  # shellcheck disable=SC2086
  nohup java -cp "$jars/*" -Dlog4j2.configurationFile="$here/log4j2.properties" -Dkafka.logs.dir="$dir" \
    $heap -XX:+UseG1GC kafka.Kafka "$dir/server.properties" >"$dir/stdout.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$id")"
  log "node $id started, pid $(cat "$(pidfile "$id")"), client port $(client_port "$id")"
}

# Waits until node i's client port opens (the broker opens it once unfenced); fails if it exits.
wait_port() {
  local id=$1 deadline=$2 dir; dir=$(node_dir "$1")
  until port_open "$(client_port "$id")"; do
    if ! running "$id"; then
      log "node $id exited; last lines of $dir/server.log:"
      tail -n 30 "$dir/server.log" "$dir/stdout.log" >&2 || true
      exit 1
    fi
    if [ $SECONDS -ge "$deadline" ]; then log "node $id not ready after ${timeout_s}s"; tail -n 30 "$dir/server.log" >&2 || true; exit 1; fi
    sleep 0.5
  done
}

wait_cluster() {
  local deadline=$1
  KAFKA_BROKERS="$(tool_brokers)" KAFKA_SECURITY_PROTOCOL=PLAINTEXT node "$here/wait-ready.mjs" $((deadline - SECONDS > 5 ? deadline - SECONDS : 5)) "$nodes"
}

up() {
  local i any_ours=false
  for i in $(seq 1 "$nodes"); do running "$i" && any_ours=true; done
  if [ "$any_ours" = false ] && port_open "$(client_port 1)"; then
    # Nodes started elsewhere (another checkout, a service) are fine as long as they all answer.
    if cluster_answers 10; then
      log "$nodes node(s) not started by this script already answer on $(brokers); using them"
      return
    fi
    log "port $(client_port 1) is taken by something that is not a $nodes-node Kafka cluster; set the ports"
    exit 1
  fi
  command -v java >/dev/null || { log "java not found: install OpenJDK 17"; exit 1; }
  fetch_jars
  mkdir -p "$data"
  if [ ! -f "$data/cluster.id" ]; then
    # 16 random bytes in base64url without '-': an id starting with '-' is read as an option by
    # the storage tool's `-t` (Kafka's own Uuid.randomUuid() avoids it too); '+' becomes 'A'.
    head -c 16 /dev/urandom | base64 | tr '+/' 'A_' | tr -d '=\n' >"$data/cluster.id"
  fi
  # Formatting starts a JVM per node: run them side by side.
  local pids=() failed=0
  for i in $(seq 1 "$nodes"); do prepare_node "$i" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || failed=1; done
  [ "$failed" -eq 0 ] || { log "formatting the storage failed"; exit 1; }
  # A node's client port opens only once a controller quorum exists: start them all, then wait.
  for i in $(seq 1 "$nodes"); do launch_node "$i"; done
  local deadline=$((SECONDS + timeout_s))
  for i in $(seq 1 "$nodes"); do wait_port "$i" "$deadline"; done
  # The port opens once the broker is unfenced; describeCluster listing every node proves they answer.
  wait_cluster "$deadline"
  log "ready on $(brokers)"
}

# SIGTERM (controlled shutdown), SIGKILL after `grace` seconds; waits until the process is gone.
stop_node() {
  local id=$1 grace=${2:-30} f; f=$(pidfile "$1")
  if ! running "$id"; then rm -f "$f"; return; fi
  local pid; pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + grace))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then
    log "node $id: controlled shutdown took over ${grace}s; killing"
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
  rm -f "$f"
  log "node $id stopped"
}

kill_node() {
  local id=$1 f; f=$(pidfile "$1")
  if ! running "$id"; then log "node $id is not running (no live pid in $f)"; rm -f "$f"; return; fi
  local pid; pid=$(cat "$f")
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$f"
  log "node $id killed (SIGKILL)"
}

start_node() {
  local id=$1
  [ -f "$(node_dir "$id")/logs/meta.properties" ] || { log "node $id has no formatted data in $(node_dir "$id"); run up first"; exit 1; }
  launch_node "$id"
  local deadline=$((SECONDS + timeout_s))
  wait_port "$id" "$deadline"
  wait_cluster "$deadline"
  log "node $id back; describeCluster lists $nodes node(s)"
}

# Stops every node at once: with a quorum of several controllers, stopping them one by one would
# leave the last one waiting for a quorum that is gone. A node not down after `grace` is killed.
stop_all() {
  local grace=$1 i pids=()
  for i in $(seq 1 "$nodes"); do stop_node "$i" "$grace" & pids+=($!); done
  for i in "${pids[@]}"; do wait "$i" || true; done
}

move_leader() {
  [ $# -eq 3 ] || { log "usage: $0 move-leader TOPIC PARTITION BROKER_ID | reassign TOPIC PARTITION ID,ID,..."; exit 2; }
  fetch_jars
  java -cp "$jars/*" -Dlog4j2.configurationFile="$here/log4j2-tools.properties" -Xmx128m \
    "$here/MoveLeader.java" "$(tool_brokers)" "$@"
}

# The node commands need the pid: refuse a node that answers but was started elsewhere.
ours() {
  if ! running "$1" && port_open "$(client_port "$1")"; then
    log "node $1 answers on port $(client_port "$1") but was not started from this checkout (no live pid in $(pidfile "$1")); run the command where it was started"
    exit 1
  fi
}

case "${1:-}" in
  up) up ;;
  stop) stop_all 30 ;;
  down) stop_all 15; if [ -d "$data" ]; then rm -rf "$data"; log "removed $data"; fi ;;
  status)
    for i in $(seq 1 "$nodes"); do running "$i" || exit 1; done
    cluster_answers 5
    ;;
  brokers) brokers ;;
  jars) fetch_jars; echo "$jars" ;;
  stop-node) check_id "${2:-}"; ours "$2"; stop_node "$2" ;;
  kill-node) check_id "${2:-}"; ours "$2"; kill_node "$2" ;;
  start-node) check_id "${2:-}"; start_node "$2" ;;
  move-leader)
    case "${4:-}" in '' | *[!0-9]*) log "move-leader takes one broker id, got '${4:-}'"; exit 2 ;; esac
    shift; move_leader "$@"
    ;;
  reassign)
    case "${4:-}" in '' | *[!0-9,]*) log "reassign takes a replica list like 2,3,1, got '${4:-}'"; exit 2 ;; esac
    shift; move_leader "$@"
    ;;
  *) echo "usage: $0 up|down|stop|status|brokers|jars|stop-node ID|kill-node ID|start-node ID|move-leader TOPIC PARTITION ID|reassign TOPIC PARTITION ID,ID,..." >&2; exit 2 ;;
esac
