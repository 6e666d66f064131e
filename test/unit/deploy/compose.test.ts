/**
 * compose.yaml, the Prometheus config and the Grafana dashboard cannot run here (no Docker), so
 * their structure is checked: the Kafka settings stay in step with scripts/kafka/kafka.sh's
 * server.properties, the services are wired to each other, and the dashboard queries only
 * metrics src/metrics/metrics.ts defines.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createMetrics } from "../../../src/metrics/metrics.js";

const read = (path: string) => readFileSync(path, "utf8");

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string | number>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
}

const compose = parse(read("compose.yaml"), { merge: true }) as { services: Record<string, Service> };
const services = compose.services;

function service(name: string): Service {
  const s = services[name];
  if (s === undefined) throw new Error(`compose.yaml has no service "${name}"`);
  return s;
}

function env(name: string): Record<string, string> {
  return Object.fromEntries(Object.entries(service(name).environment ?? {}).map(([k, v]) => [k, String(v)]));
}

/**
 * kafka.sh's server.properties heredoc as the script writes it for one node (KAFKA_NODES unset):
 * node 1 on the default ports, the one-node replication factor and min ISR, a voters list of one.
 */
function kafkaShProperties(): Map<string, string> {
  const script = read("scripts/kafka/kafka.sh");
  const port = /port=\$\{KAFKA_PORT:-(\d+)\}/.exec(script)?.[1];
  const cport = /cport=\$\{KAFKA_CONTROLLER_PORT:-(\d+)\}/.exec(script)?.[1];
  // The one-node branch sets them as plain numbers; the cluster branch computes them.
  const rf = /\n\s*rf=(\d+)\n/.exec(script)?.[1];
  const minIsr = /\n\s*min_isr=(\d+)\n/.exec(script)?.[1];
  const body = /<<PROPS\n([\s\S]*?)\nPROPS\n/.exec(script)?.[1];
  if ([port, cport, rf, minIsr, body].includes(undefined)) {
    throw new Error(
      "cannot read the ports, replication settings or server.properties heredoc of scripts/kafka/kafka.sh",
    );
  }
  const properties = new Map<string, string>();
  for (const line of body!.split("\n")) {
    const eq = line.indexOf("=");
    if (eq < 0) continue;
    properties.set(
      line.slice(0, eq),
      line
        .slice(eq + 1)
        .replaceAll("$(voters)", `1@127.0.0.1:${cport}`)
        .replaceAll("$min_isr", minIsr!)
        .replaceAll("$rf", rf!)
        .replaceAll("$id", "1")
        .replaceAll("$p", port!)
        .replaceAll("$c", cport!),
    );
  }
  return properties;
}

/** The apache/kafka image's variable for a property: KAFKA_ + upper case, dots to underscores. */
const kafkaVariable = (property: string) => `KAFKA_${property.toUpperCase().replaceAll(".", "_")}`;

/** `NAME://host:port,...` → [{ name, host, port }]. */
function listeners(value: string): { name: string; host: string; port: string }[] {
  return value.split(",").map((l) => {
    const m = /^([A-Z_]+):\/\/([^:]*):(\d+)$/.exec(l.trim());
    if (!m) throw new Error(`not a listener: ${l}`);
    return { name: m[1]!, host: m[2]!, port: m[3]! };
  });
}

/** Metric names a PromQL expression may use: ours, plus a histogram's _bucket, _sum and _count series. */
async function knownSeries(): Promise<Set<string>> {
  const known = new Set<string>();
  for (const m of await createMetrics().registry.getMetricsAsJSON()) {
    known.add(m.name);
    if (String(m.type) === "histogram") for (const s of ["_bucket", "_sum", "_count"]) known.add(m.name + s);
  }
  return known;
}

interface Panel {
  type: string;
  title: string;
  datasource?: { uid: string };
  targets?: { expr: string; datasource?: { uid: string } }[];
}

const dashboard = JSON.parse(read("deploy/grafana/dashboards/replayable.json")) as {
  uid: string;
  panels: Panel[];
};
const exprs = dashboard.panels.flatMap((p) =>
  (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
);

describe("compose.yaml", () => {
  it("runs Kafka, PostgreSQL, the migrations, the consumer, Prometheus and Grafana", () => {
    expect(Object.keys(services).sort()).toEqual(
      ["grafana", "kafka", "kafka-init", "migrate", "postgres", "prometheus", "replayable"].sort(),
    );
  });

  it("uses the apache/kafka image at the version pinned in scripts/kafka/pom.xml", () => {
    const version = /<kafka\.version>(.+)<\/kafka\.version>/.exec(read("scripts/kafka/pom.xml"))?.[1];
    expect(version).toBeDefined();
    expect(service("kafka").image).toBe(`apache/kafka:${version}`);
    expect(service("kafka-init").image).toBe(`apache/kafka:${version}`);
  });

  it("gives Kafka every setting of kafka.sh's server.properties (replication factors, roles, group settings)", () => {
    const kafka = env("kafka");
    const properties = kafkaShProperties();
    // Addresses differ between a host process and a container; they are checked below.
    const addressed = new Set([
      "listeners",
      "advertised.listeners",
      "controller.quorum.voters",
      "listener.security.protocol.map",
      "log.dirs",
    ]);
    expect(properties.get("offsets.topic.replication.factor")).toBe("1");
    for (const [property, value] of properties) {
      if (addressed.has(property)) continue;
      expect({ property, value: kafka[kafkaVariable(property)] }).toEqual({ property, value });
    }
    // Nothing in compose.yaml that kafka.sh does not set (besides addresses and the heap).
    for (const variable of Object.keys(kafka).filter((k) => k.startsWith("KAFKA_"))) {
      if (variable === "KAFKA_HEAP_OPTS") continue;
      const property = variable.slice("KAFKA_".length).toLowerCase().replaceAll("_", ".");
      expect({ variable, known: properties.has(property) }).toEqual({ variable, known: true });
    }
    expect(kafka.CLUSTER_ID).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it("listens like kafka.sh: clients on localhost:9092 for the host, the controller on 9093, plus an internal listener for containers", () => {
    const kafka = env("kafka");
    const properties = kafkaShProperties();
    const local = listeners(properties.get("listeners")!);
    const hostPort = local.find((l) => l.name === "PLAINTEXT")!.port;
    const controllerPort = local.find((l) => l.name === "CONTROLLER")!.port;
    expect([hostPort, controllerPort]).toEqual(["9092", "9093"]);

    const bound = listeners(kafka.KAFKA_LISTENERS!);
    const advertised = listeners(kafka.KAFKA_ADVERTISED_LISTENERS!);
    expect(bound.find((l) => l.name === "CONTROLLER")?.port).toBe(controllerPort);
    expect(kafka.KAFKA_CONTROLLER_QUORUM_VOTERS).toBe(
      properties.get("controller.quorum.voters")!.replace("127.0.0.1", "kafka"),
    );
    expect(kafka.KAFKA_CONTROLLER_LISTENER_NAMES).toBe("CONTROLLER");

    // Host clients: a listener advertised as localhost:9092, published on the host's 9092.
    const host = advertised.find((l) => l.host === "localhost");
    expect(host?.port).toBe(hostPort);
    expect(bound.find((l) => l.name === host?.name)?.port).toBe(hostPort);
    expect(service("kafka").ports).toContain(`${hostPort}:${hostPort}`);

    // Containers: the inter-broker listener, advertised under the service name.
    const internal = advertised.find((l) => l.name === kafka.KAFKA_INTER_BROKER_LISTENER_NAME);
    expect(internal?.host).toBe("kafka");
    expect(bound.find((l) => l.name === internal?.name)?.port).toBe(internal?.port);
    for (const name of ["migrate", "replayable"]) {
      expect(env(name).KAFKA_BROKERS).toBe(`kafka:${internal?.port}`);
    }
    expect(service("kafka-init").command).toContain(`kafka:${internal?.port}`);

    // Every listener name has a security protocol, as in kafka.sh.
    const map = new Map(
      kafka.KAFKA_LISTENER_SECURITY_PROTOCOL_MAP!.split(",").map((e) => e.split(":") as [string, string]),
    );
    for (const l of bound)
      expect({ listener: l.name, protocol: map.get(l.name) }).toEqual({
        listener: l.name,
        protocol: "PLAINTEXT",
      });
  });

  it("creates the ledger projection's topic, migrates, then runs the consumer with /metrics reachable", () => {
    expect(service("kafka-init").command).toContain("ledger-events");
    expect(service("migrate").command).toEqual(["migrate", "--projection", "ledger"]);
    const replayable = service("replayable");
    expect(replayable.command?.slice(0, 3)).toEqual(["run", "--projection", "ledger"]);
    expect(replayable.depends_on).toMatchObject({
      migrate: { condition: "service_completed_successfully" },
      "kafka-init": { condition: "service_completed_successfully" },
      kafka: { condition: "service_healthy" },
    });
    expect(service("migrate").depends_on).toMatchObject({ postgres: { condition: "service_healthy" } });
    const e = env("replayable");
    expect(e.REPLAYABLE_METRICS_HOST).toBe("0.0.0.0");
    expect(replayable.ports).toContain(`127.0.0.1:${e.REPLAYABLE_METRICS_PORT}:${e.REPLAYABLE_METRICS_PORT}`);
    // The service's DATABASE_URL points at the postgres service with its password and database.
    const pg = env("postgres");
    const url = new URL(e.DATABASE_URL!);
    expect([url.hostname, url.password, url.pathname]).toEqual([
      "postgres",
      pg.POSTGRES_PASSWORD,
      `/${pg.POSTGRES_DB}`,
    ]);
    expect(env("migrate").DATABASE_URL).toBe(e.DATABASE_URL);
  });

  it("builds the service from the Dockerfile: node 24 (issue 29), npm ci, build", () => {
    const dockerfile = read("Dockerfile");
    expect(dockerfile).toMatch(/^FROM node:24\S* AS build$/m);
    expect(dockerfile).not.toMatch(/^FROM node:(?!24)/m);
    expect(dockerfile).toContain("RUN npm ci");
    // npm ci's postinstall applies patches/ (patches/README.md): they must be in the image by then.
    expect(dockerfile.indexOf("COPY patches")).toBeGreaterThan(-1);
    expect(dockerfile.indexOf("COPY patches")).toBeLessThan(dockerfile.indexOf("RUN npm ci"));
    expect(dockerfile).toContain("npm run build");
    expect(service("replayable").build).toBe(".");
    expect(service("migrate").image).toBe(service("replayable").image);
  });

  it("has Prometheus scrape the consumer's /metrics", () => {
    const prometheus = service("prometheus");
    expect(prometheus.volumes).toContain(
      "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro",
    );
    const config = parse(read("deploy/prometheus/prometheus.yml")) as {
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const targets = config.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets));
    expect(targets).toContain(`replayable:${env("replayable").REPLAYABLE_METRICS_PORT}`);
  });

  it("provisions Grafana with the Prometheus data source and the dashboard", () => {
    const grafana = service("grafana");
    expect(grafana.volumes).toEqual(
      expect.arrayContaining([
        "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro",
        "./deploy/grafana/dashboards:/var/lib/grafana/dashboards:ro",
      ]),
    );
    const datasources = parse(read("deploy/grafana/provisioning/datasources/prometheus.yml")) as {
      datasources: { uid: string; type: string; url: string }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ uid: "prometheus", type: "prometheus", url: "http://prometheus:9090" }),
    ]);
    const providers = parse(read("deploy/grafana/provisioning/dashboards/replayable.yml")) as {
      providers: { options: { path: string } }[];
    };
    expect(providers.providers[0]?.options.path).toBe("/var/lib/grafana/dashboards");
    expect(env("grafana").GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(
      "/var/lib/grafana/dashboards/replayable.json",
    );
    for (const panel of dashboard.panels.filter((p) => p.type !== "row")) {
      expect({ panel: panel.title, uid: panel.datasource?.uid }).toEqual({
        panel: panel.title,
        uid: "prometheus",
      });
    }
  });
});

describe("Grafana dashboard", () => {
  it("queries only metrics that src/metrics/metrics.ts defines", async () => {
    const known = await knownSeries();
    const used = exprs.flatMap(({ panel, expr }) =>
      [...expr.matchAll(/\breplayable_[a-z0-9_]+/g)].map((m) => ({ panel, metric: m[0] })),
    );
    expect(used.length).toBeGreaterThan(0);
    for (const u of used) expect({ ...u, known: known.has(u.metric) }).toEqual({ ...u, known: true });
  });

  it("shows every engine metric", async () => {
    const engine = (await createMetrics({ processMetrics: false }).registry.getMetricsAsJSON()).map(
      (m) => m.name,
    );
    const all = exprs.map((e) => e.expr).join("\n");
    for (const name of engine) expect({ name, shown: all.includes(name) }).toEqual({ name, shown: true });
  });

  it("has the panels operators asked for: duplicates, apply rate, lag, p50/p99 latency, dead letters, retries, rebalances", () => {
    const byMetric = (fragment: string) => exprs.filter((e) => e.expr.includes(fragment));
    expect(byMetric("rate(replayable_duplicates_total").some((e) => /by \(topic, key\)/.test(e.expr))).toBe(
      true,
    );
    expect(byMetric("rate(replayable_records_applied_total").length).toBeGreaterThan(0);
    expect(
      byMetric("replayable_consumer_lag_records").some((e) => /by \(topic, partition\)/.test(e.expr)),
    ).toBe(true);
    for (const histogram of [
      "replayable_batch_duration_seconds",
      "replayable_transaction_duration_seconds",
    ]) {
      for (const q of ["0.5", "0.99"]) {
        expect(
          exprs.some((e) => e.expr.includes(`histogram_quantile(${q},`) && e.expr.includes(histogram)),
        ).toBe(true);
      }
    }
    expect(byMetric("replayable_records_dead_lettered_total").length).toBeGreaterThan(0);
    expect(byMetric("replayable_transaction_retries_total").length).toBeGreaterThan(0);
    expect(byMetric("replayable_rebalances_total").length).toBeGreaterThan(0);
  });
});
