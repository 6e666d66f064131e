#!/usr/bin/env bash
# Runs one separate, secured Apache Kafka 4.x node (KRaft, combined broker + controller) from the
# jars kafka.sh caches, for the security tests (`make test-security`) and for trying replayable
# against TLS and SASL by hand. See ../../docs/security.md.
#
#   scripts/kafka/secure-kafka.sh up              make a CA and the broker's certificate (once per data
#                                                 directory), SCRAM users at storage format time, start
#                                                 the node and wait until admin answers over SASL_SSL
#   scripts/kafka/secure-kafka.sh down            stop the node and remove the data directory (CA included)
#   scripts/kafka/secure-kafka.sh stop            stop the node, keep the data
#   scripts/kafka/secure-kafka.sh status          exit 0 when the node answers admin over SASL_SSL
#   scripts/kafka/secure-kafka.sh client-cert NAME [DAYS]
#                                                 a client certificate CN=NAME signed by the CA (principal
#                                                 User:CN=NAME), valid DAYS days (default 2; 0: expired a
#                                                 second after it is made); prints the certificate's path,
#                                                 the key is beside it (NAME.key)
#   scripts/kafka/secure-kafka.sh grant PRINCIPAL OPERATION topic|group|cluster NAME
#                                                 allow PRINCIPAL (e.g. User:CN=carol) OPERATION (Read,
#                                                 Describe, Write, ...) on one resource, as admin
#                                                 (grant-acl.mjs; Kafka's kafka-acls is not in the jars)
#   scripts/kafka/secure-kafka.sh dir             print the data directory
#
# Listeners, all on 127.0.0.1; no client listener is plaintext:
#   KAFKA_SECURE_SASL_PORT        SASL_SSL, SCRAM-SHA-512 and OAUTHBEARER (default 9392)
#   KAFKA_SECURE_SSL_PORT         SSL, client certificates required      (default 9393)
#   KAFKA_SECURE_CONTROLLER_PORT  KRaft controller, PLAINTEXT             (default 9394)
#   KAFKA_SECURE_DATA_DIR         data, certificates, passwords          (default <repo>/.data/kafka-secure)
#   KAFKA_SECURE_USERS            SCRAM-SHA-512 users made at format time (default "admin alice bob")
#   KAFKA_HEAP_OPTS               JVM heap                                (default -Xms256m -Xmx512m)
#   KAFKA_READY_TIMEOUT_S         how long `up` waits                     (default 90)
# OAUTHBEARER takes Kafka's unsecured tokens (an unsigned JWT, `alg: none`, whose `sub` is the
# principal; Kafka's default OAuthBearerUnsecuredValidatorCallbackHandler): for testing token
# providers only, never a production setting.
# The StandardAuthorizer is on with allow.everyone.if.no.acl.found=false: a principal may do only
# what an ACL allows. Super users: User:admin, and User:ANONYMOUS, the principal of the PLAINTEXT
# controller listener (the node talking to its own controller). Each user's password is generated
# into <data>/users/NAME.password (mode 600); the CA is <data>/tls/ca.pem (key ca.key). Nothing of it
# is committed: the data directory is git-ignored.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
sasl_port=${KAFKA_SECURE_SASL_PORT:-9392}
ssl_port=${KAFKA_SECURE_SSL_PORT:-9393}
cport=${KAFKA_SECURE_CONTROLLER_PORT:-9394}
data=${KAFKA_SECURE_DATA_DIR:-$repo/.data/kafka-secure}
users=${KAFKA_SECURE_USERS:-admin alice bob}
heap=${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}
timeout_s=${KAFKA_READY_TIMEOUT_S:-90}
tls=$data/tls
pidfile=$data/kafka.pid

log() { printf 'secure-kafka: %s\n' "$*" >&2; }

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# The CA and the broker's certificate (SAN 127.0.0.1 and localhost), each key PKCS#8 unencrypted.
make_ca() {
  [ -f "$tls/ca.pem" ] && return
  command -v openssl >/dev/null || { log "openssl not found"; exit 1; }
  mkdir -p "$tls"
  chmod 700 "$tls"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tls/ca.key" -out "$tls/ca.pem" -days 7 \
    -subj "/CN=replayable-test-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  sign broker 7 "subjectAltName=IP:127.0.0.1,DNS:localhost"
  # Kafka's PEM keystore: the private key, then the certificate chain.
  cat "$tls/broker.key" "$tls/broker.pem" >"$tls/broker.keystore.pem"
  log "made a CA ($tls/ca.pem) and the broker's certificate"
}

# sign NAME DAYS [EXTENSION]: NAME.key and NAME.pem (CN=NAME) signed by the CA.
sign() {
  local name=$1 days=$2 ext=${3:-} extfile
  openssl req -newkey rsa:2048 -nodes -keyout "$tls/$name.key" -out "$tls/$name.csr" -subj "/CN=$name" 2>/dev/null
  extfile=$(mktemp)
  printf 'basicConstraints=CA:FALSE\n%s\n' "$ext" >"$extfile"
  openssl x509 -req -in "$tls/$name.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
    -days "$days" -extfile "$extfile" -out "$tls/$name.pem" 2>/dev/null
  rm -f "$extfile" "$tls/$name.csr"
  chmod 600 "$tls/$name.key"
}

password_of() { cat "$data/users/$1.password"; }

make_users() {
  mkdir -p "$data/users"
  chmod 700 "$data/users"
  local user
  for user in $users; do
    [ -f "$data/users/$user.password" ] && continue
    (umask 077 && head -c 18 /dev/urandom | base64 | tr '+/' 'A_' | tr -d '=\n' >"$data/users/$user.password")
  done
}

write_properties() {
  cat >"$data/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=SASL_SSL://127.0.0.1:$sasl_port,SSL://127.0.0.1:$ssl_port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=SASL_SSL://127.0.0.1:$sasl_port,SSL://127.0.0.1:$ssl_port
controller.listener.names=CONTROLLER
listener.security.protocol.map=SASL_SSL:SASL_SSL,SSL:SSL,CONTROLLER:PLAINTEXT
inter.broker.listener.name=SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512,OAUTHBEARER
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(password_of admin)";
listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";
ssl.keystore.type=PEM
ssl.keystore.location=$tls/broker.keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$tls/ca.pem
listener.name.ssl.ssl.client.auth=required
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
allow.everyone.if.no.acl.found=false
super.users=User:admin;User:ANONYMOUS
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
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=10000
group.consumer.min.heartbeat.interval.ms=1000
group.consumer.heartbeat.interval.ms=2000
delete.topic.enable=true
PROPS
  chmod 600 "$data/server.properties"
}

format_storage() {
  [ -f "$data/logs/meta.properties" ] && return
  local args=() user
  for user in $users; do args+=(--add-scram "SCRAM-SHA-512=[name=$user,password=$(password_of "$user")]"); done
  java -cp "$jars/*" -Dlog4j2.configurationFile="$here/log4j2-tools.properties" \
    kafka.tools.StorageTool format -t "$(head -c 16 /dev/urandom | base64 | tr '+/' 'A_' | tr -d '=\n')" \
    -c "$data/server.properties" "${args[@]}" >"$data/format.log" 2>&1 \
    || { cat "$data/format.log" >&2; return 1; }
}

# Exit 0 when admin answers describeCluster over SASL_SSL within $1 seconds.
answers() {
  KAFKA_BROKERS="127.0.0.1:$sasl_port" KAFKA_SECURITY_PROTOCOL=SASL_SSL KAFKA_SSL_CA_LOCATION="$tls/ca.pem" \
    KAFKA_SASL_MECHANISM=SCRAM-SHA-512 KAFKA_SASL_USERNAME=admin \
    KAFKA_SASL_PASSWORD_FILE="$data/users/admin.password" node "$here/wait-ready.mjs" "$1" 1
}

up() {
  if running; then answers 10 && { log "ready on SASL_SSL 127.0.0.1:$sasl_port, SSL 127.0.0.1:$ssl_port"; return; }; fi
  local p
  for p in "$sasl_port" "$ssl_port" "$cport"; do
    if port_open "$p"; then log "port $p is taken by a process this script did not start; stop it or set KAFKA_SECURE_*_PORT"; exit 1; fi
  done
  command -v java >/dev/null || { log "java not found: install OpenJDK 17"; exit 1; }
  jars=$("$here/kafka.sh" jars)
  mkdir -p "$data"
  make_ca
  make_users
  write_properties
  format_storage
  # shellcheck disable=SC2086
  nohup java -cp "$jars/*" -Dlog4j2.configurationFile="$here/log4j2.properties" -Dkafka.logs.dir="$data" \
    $heap -XX:+UseG1GC kafka.Kafka "$data/server.properties" >"$data/stdout.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  log "node started, pid $(cat "$pidfile")"
  local deadline=$((SECONDS + timeout_s))
  until port_open "$sasl_port"; do
    if ! running; then log "the node exited; last lines of $data/server.log:"; tail -n 30 "$data/server.log" "$data/stdout.log" >&2 || true; exit 1; fi
    if [ $SECONDS -ge $deadline ]; then log "not ready after ${timeout_s}s"; tail -n 30 "$data/server.log" >&2 || true; exit 1; fi
    sleep 0.5
  done
  answers $((deadline - SECONDS > 5 ? deadline - SECONDS : 5))
  log "ready on SASL_SSL 127.0.0.1:$sasl_port, SSL 127.0.0.1:$ssl_port (client certificates required)"
}

stop() {
  if ! running; then rm -f "$pidfile"; return; fi
  local pid; pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then log "controlled shutdown took over 30s; killing"; kill -KILL "$pid" 2>/dev/null || true; fi
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$pidfile"
  log "node stopped"
}

case "${1:-}" in
  up) up ;;
  stop) stop ;;
  down) stop; if [ -d "$data" ]; then rm -rf "$data"; log "removed $data"; fi ;;
  status) running && answers 5 ;;
  client-cert)
    case "${2:-}" in '' | *[!a-zA-Z0-9._-]*) log "client-cert takes a name of a-z A-Z 0-9 . _ -, got '${2:-}'"; exit 2 ;; esac
    case "${3:-2}" in *[!0-9]*) log "DAYS must be a whole number, got '$3'"; exit 2 ;; esac
    [ -f "$tls/ca.key" ] || { log "no CA in $tls; run up first"; exit 1; }
    sign "$2" "${3:-2}" "extendedKeyUsage=clientAuth"
    echo "$tls/$2.pem"
    ;;
  grant)
    shift
    KAFKA_BROKERS=127.0.0.1:$sasl_port KAFKA_SSL_CA_LOCATION=$tls/ca.pem \
      KAFKA_SASL_PASSWORD_FILE=$data/users/admin.password node "$here/grant-acl.mjs" "$@"
    ;;
  dir) echo "$data" ;;
  *) echo "usage: $0 up|down|stop|status|client-cert NAME [DAYS]|grant PRINCIPAL OPERATION topic|group|cluster NAME|dir" >&2; exit 2 ;;
esac
