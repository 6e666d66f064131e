#!/usr/bin/env bash
# Runs a real single-node Apache Kafka 4.x broker (KRaft, broker + controller)
# from Maven Central jars with the local Java. See ../../README.md "Local stack".
#
#   scripts/kafka/kafka.sh up      fetch jars (cached), format storage once, start, wait until ready
#   scripts/kafka/kafka.sh down    stop the broker and remove its data directory
#   scripts/kafka/kafka.sh stop    stop the broker, keep its data
#   scripts/kafka/kafka.sh status  exit 0 when the broker answers
#
# Settings (environment):
#   KAFKA_PORT             client listener port             (default 9092)
#   KAFKA_CONTROLLER_PORT  KRaft controller listener port   (default 9093)
#   KAFKA_DATA_DIR         log.dirs, pid file, server.log   (default <repo>/.data/kafka)
#   KAFKA_CACHE_DIR        where the jars are cached        (default <repo>/.cache/kafka)
#   KAFKA_READY_TIMEOUT_S  how long `up` waits for the broker (default 90)
#   KAFKA_HEAP_OPTS        JVM heap                          (default -Xms256m -Xmx512m)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")
port=${KAFKA_PORT:-9092}
cport=${KAFKA_CONTROLLER_PORT:-9093}
data=${KAFKA_DATA_DIR:-$repo/.data/kafka}
cache=${KAFKA_CACHE_DIR:-$repo/.cache/kafka}
jars=$cache/$version
timeout_s=${KAFKA_READY_TIMEOUT_S:-90}
heap=${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}
pidfile=$data/kafka.pid

log() { printf 'kafka: %s\n' "$*" >&2; }

fetch_jars() {
  if [ -f "$jars/.complete" ]; then return; fi
  log "fetching Kafka $version jars from Maven Central into $jars"
  mkdir -p "$jars"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$jars"
  ls "$jars"/kafka_2.13-"$version".jar >/dev/null
  touch "$jars/.complete"
}

running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
}

write_properties() {
  cat >"$data/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$data/logs
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
delete.topic.enable=true
PROPS
}

up() {
  if running && port_open; then log "already running on 127.0.0.1:$port (pid $(cat "$pidfile"))"; return; fi
  if port_open; then
    # A broker started elsewhere (another checkout, a service) is fine as long as it answers.
    if KAFKA_BROKERS="127.0.0.1:$port" node "$here/wait-ready.mjs" 10; then
      log "a broker not started by this script already answers on 127.0.0.1:$port; using it"
      return
    fi
    log "port $port is taken by something that is not a Kafka broker; set KAFKA_PORT"
    exit 1
  fi
  command -v java >/dev/null || { log "java not found: install OpenJDK 17"; exit 1; }
  fetch_jars
  mkdir -p "$data"
  write_properties
  if [ ! -f "$data/cluster.id" ]; then
    head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n' >"$data/cluster.id"
  fi
  local cp="$jars/*"
  local jvm=(java -cp "$cp" -Dlog4j2.configurationFile="$here/log4j2.properties" -Dkafka.logs.dir="$data")
  "${jvm[@]}" kafka.tools.StorageTool format -t "$(cat "$data/cluster.id")" \
    -c "$data/server.properties" --ignore-formatted >"$data/format.log" 2>&1 \
    || { cat "$data/format.log" >&2; exit 1; }
  # shellcheck disable=SC2086
  nohup "${jvm[@]}" $heap -XX:+UseG1GC kafka.Kafka "$data/server.properties" \
    >"$data/stdout.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  log "started pid $(cat "$pidfile"), waiting for 127.0.0.1:$port"
  local deadline=$((SECONDS + timeout_s))
  until port_open; do
    if ! running; then log "broker exited; last lines of $data/server.log:"; tail -30 "$data/server.log" "$data/stdout.log" >&2 || true; exit 1; fi
    if [ $SECONDS -ge $deadline ]; then log "not ready after ${timeout_s}s"; tail -30 "$data/server.log" >&2 || true; exit 1; fi
    sleep 0.5
  done
  # The port opens once the broker is unfenced; a describeCluster proves it answers.
  KAFKA_BROKERS="127.0.0.1:$port" node "$here/wait-ready.mjs" $((deadline - SECONDS > 5 ? deadline - SECONDS : 5))
  log "ready on 127.0.0.1:$port"
}

stop() {
  if ! running; then rm -f "$pidfile"; return; fi
  local pid; pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && { log "controlled shutdown took over 30s; killing"; kill -KILL "$pid" || true; }
  rm -f "$pidfile"
  log "stopped"
}

case "${1:-}" in
  up) up ;;
  stop) stop ;;
  down) stop; rm -rf "$data"; log "removed $data" ;;
  status) running && port_open && KAFKA_BROKERS="127.0.0.1:$port" node "$here/wait-ready.mjs" 5 ;;
  jars) fetch_jars; echo "$jars" ;;
  *) echo "usage: $0 up|down|stop|status|jars" >&2; exit 2 ;;
esac
