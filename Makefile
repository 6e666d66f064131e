# replayable: the two commands are `make demo` and `make test`. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help
export KAFKA_BROKERS ?= 127.0.0.1:$(or $(KAFKA_PORT),9092)
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
# The fault tests' three-broker cluster (test/helpers/faultClusterPorts.ts): its own ports and data.
FAULTS_KAFKA = KAFKA_NODES=3 KAFKA_CLUSTER_PORT=29092 KAFKA_CLUSTER_CONTROLLER_PORT=29192 \
  KAFKA_CLUSTER_INTERNAL_PORT=29292 KAFKA_CLUSTER_ADVERTISED_PORT=29392 KAFKA_CLUSTER_DATA_DIR=.data/kafka-faults
# The soak's three-broker cluster (test/soak/main.ts, docs/soak.md): its own ports and data.
SOAK_KAFKA = KAFKA_NODES=3 KAFKA_CLUSTER_PORT=39092 KAFKA_CLUSTER_CONTROLLER_PORT=39192 \
  KAFKA_CLUSTER_INTERNAL_PORT=39292 KAFKA_CLUSTER_ADVERTISED_PORT=39392 KAFKA_CLUSTER_DATA_DIR=.data/kafka-soak

.PHONY: help install up down pg prometheus migrate build typecheck lint test test-unit test-int test-platformatic test-cluster test-security test-faults test-smoke soak demo bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.package-lock.json ## npm ci when package-lock.json changed

pg: ## make sure PostgreSQL answers on 127.0.0.1:5432 (starts the local cluster if down)
	@scripts/ensure-postgres.sh

prometheus: ## make sure promtool and prometheus are installed (the Debian package, for the metrics tests)
	@scripts/ensure-prometheus.sh

up: install pg ## start the local single-node Kafka (KRaft) and check PostgreSQL; harmless twice
	@scripts/kafka/kafka.sh up

down: ## stop the local Kafka (the three-broker test clusters and the secured brokers too) and remove their data
	@scripts/kafka/kafka.sh down
	@KAFKA_NODES=3 scripts/kafka/kafka.sh down
	@$(FAULTS_KAFKA) scripts/kafka/kafka.sh down
	@$(SOAK_KAFKA) scripts/kafka/kafka.sh down
	@scripts/kafka/secure-kafka.sh down
	@KAFKA_SECURE_DATA_DIR=.data/kafka-secure-test scripts/kafka/secure-kafka.sh down

migrate: up ## apply the database migrations
	./bin/replayable.js migrate --projection ledger github

build: install ## compile to dist/
	npm run build

typecheck: install ## tsc --noEmit
	npm run typecheck

lint: install ## eslint (type-checked rules) and prettier --check
	npm run lint

test-unit: install ## unit tests (no services)
	npm run test:unit

test-int: up prometheus ## integration tests against real Kafka and PostgreSQL (and a real Prometheus)
	npm run test:int

test-cluster: install pg ## leader changes and broker faults on a local three-broker cluster (started by the tests)
	npm run test:cluster

test-security: install pg ## TLS, SASL and ACLs against one secured broker (started and removed by the tests)
	npm run test:security

test-platformatic: up prometheus ## the guarantee suites again on the second Kafka client (KAFKA_CLIENT=platformatic, classic and KIP-848 groups, one and three brokers)
	npm run test:platformatic

# Three more JVMs do not fit beside the cluster's on 2 cores: the cluster (if this checkout started
# it) is stopped first, its data kept; `make test-cluster` starts it again.
test-faults: install pg ## silent, reset and slow connections to PostgreSQL and brokers, through fault proxies (its own three-broker cluster), on both Kafka clients
	@KAFKA_NODES=3 scripts/kafka/kafka.sh stop
	npm run test:faults

test: lint typecheck test-unit test-int test-platformatic test-cluster test-security test-faults ## lint, typecheck, unit, integration (on both Kafka clients), cluster, security and fault tests (starts the stack)

# What CI runs on the Node.js lines besides the one of the whole suite (.ci/run, README "Supported
# Node.js versions"): PATH="$$(scripts/node-lines.sh 22):$$PATH" make test-smoke
test-smoke: up ## on the node first in PATH: the unit tests and one end-to-end integration test (dedupe, replay)
	node --version
	npm run test:unit
	npx vitest run --project integration test/integration/engine/dedupeKeys.test.ts

soak: install pg ## randomized faults against a model of the ledger (SOAK_SECONDS, default 600; SOAK_SEED); its own three-broker cluster
	@$(SOAK_KAFKA) scripts/kafka/kafka.sh up
	@# The cluster is stopped after the checks, passed or failed (its data kept for a look: make down removes it).
	@$(SOAK_KAFKA) node --import tsx test/soak/main.ts; status=$$?; $(SOAK_KAFKA) scripts/kafka/kafka.sh stop; exit $$status

demo: up ## the end-to-end demo on real input (see README)
	@node --import tsx scripts/demo.ts

bench: up ## benchmarks (not part of make test)
	npx tsx bench/run.ts $(BENCH_ARGS)

clean: down ## stop Kafka, remove build output
	rm -rf dist
