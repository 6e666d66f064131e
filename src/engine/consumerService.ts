/**
 * The consumer service: one member of a projection's consumer group, put together. It owns the
 * resources (the PostgreSQL pools, the projection's shared advisory lock, the HTTP server, the
 * Kafka feed, the DLQ producer), wires the observers to the member's events, and starts and stops
 * them in order. The data flow itself is the {@link Member}'s and its {@link PartitionWorker}s'.
 * `start()` and `stop()` are idempotent; stop runs in reverse order of start.
 */
import type { TracerProvider } from "@opentelemetry/api";
import pLimit from "p-limit";
import type pg from "pg";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import { createPool } from "../db/pool.js";
import { ReplayableError, errorMessage } from "../errors.js";
import type { CommitResult } from "../feed.js";
import type { ClusterAdmin } from "../kafka/admin.js";
import { checkKafkaAccess } from "../kafka/accessCheck.js";
import { createKafka } from "../kafka/client.js";
import type { FailureContext } from "../kafka/securityFailure.js";
import type { OauthBearerProvider } from "../kafka/securityConfig.js";
import { connectClusterAdmin, deadLetterSink } from "../kafka/clients.js";
import { missingTopicsError } from "../kafka/missingTopicsError.js";
import type { DeadLetterSink } from "../kafka/deadLetterPublisher.js";
import { KafkaFeed, type FetchLimits } from "../kafka/kafkaFeed.js";
import { PlatformaticFeed } from "../kafka/platformatic/platformaticFeed.js";
import { platformaticSecurity } from "../kafka/platformatic/platformaticSecurity.js";
import { withBindings } from "../logger.js";
import { createMetrics, initialiseMetrics, type Metrics } from "../metrics/metrics.js";
import { startHttpServer, type HttpServer, type Readiness } from "../metrics/server.js";
import type { DuplicateKeyKind, Projection } from "../projection.js";
import { recordProjectionTopics } from "../sql/projectionTopics.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";
import type { Assignment, TopicPartition } from "../topicPartition.js";
import { checkpointAheadOfLog } from "./checkpointAheadOfLog.js";
import { DeadLetterForwarder } from "./deadLetterForwarder.js";
import { EventIdGauge } from "./eventIdGauge.js";
import { LagMonitor } from "./lagMonitor.js";
import { MemoryBudget } from "./memoryBudget.js";
import type { MemoryPlan } from "./memoryPlan.js";
import { Member, type WorkerSettings } from "./member.js";
import { MemberEvents, type TransactionCommitted } from "./memberEvents.js";
import { observeMetrics } from "./metricsObserver.js";
import { poolTransactionRunner } from "./poolTransactionRunner.js";
import { ProjectionLockSession } from "./projectionLockSession.js";
import { ProgressReporter, type ProgressTotals } from "./progressReporter.js";
import { selectVersions } from "../sql/projectionVersions.js";
import type { VersionedInstance } from "../versions/versionNames.js";
import { startTracing, type Tracing } from "../tracing/tracing.js";
import type { TransactionRunner } from "./partitionWorker.js";
import { stopStep } from "../support/stopStep.js";

/** Options for {@link ConsumerService}. */
export interface ConsumerServiceOptions {
  readonly config: Config;
  readonly projection: Projection<unknown>;
  /** Where the service logs; it adds `groupId` and `projection` unless already bound. */
  readonly log: Logger;
  /** Serve /metrics, /healthz, /readyz; default true. */
  readonly http?: boolean;
  /** Metrics to update; default a new registry. */
  readonly metrics?: Metrics;
  /**
   * Called after each committed transaction (and each batch the replay fast path skipped), once
   * its Kafka offset commit was attempted. For benchmarks and observers; an exception it throws is
   * logged and ignored.
   */
  readonly onBatchCommitted?: (event: BatchCommitted) => void;
  /** Called on every group join (rebalance) with this member's assignment: topic → partitions. */
  readonly onAssignment?: (assignment: Assignment) => void;
  /**
   * The OAUTHBEARER token provider, for KAFKA_SASL_MECHANISM=OAUTHBEARER: called on every
   * (re)authentication; overrides the config file's `kafkaOauthBearerProvider` (docs/security.md).
   */
  readonly oauthBearerProvider?: OauthBearerProvider;
  /**
   * Your OpenTelemetry tracer provider: each transaction becomes a span of it, its statements
   * child spans (docs/observability.md), whatever OTEL_TRACES_EXPORTER says; the service flushes
   * it on stop but never shuts it down. Absent: traces follow OTEL_TRACES_EXPORTER (`otlp` starts
   * the SDK; default none, and nothing of OpenTelemetry is loaded).
   */
  readonly tracerProvider?: TracerProvider;
}

/** What {@link ConsumerServiceOptions.onBatchCommitted} reports about one transaction. */
export interface BatchCommitted {
  readonly topic: string;
  readonly partition: number;
  readonly firstOffset: string;
  readonly lastOffset: string;
  /** Records in the transaction (or in the skipped batch). */
  readonly records: number;
  readonly applied: number;
  readonly duplicates: Readonly<Record<DuplicateKeyKind, number>>;
  readonly deadLettered: number;
  /** From the first attempt's start to the end of the offset commit, in ms (retries in place included). */
  readonly durationMs: number;
  /**
   * BEGIN to COMMIT of the attempt that committed, ms; undefined on the fast path. `durationMs`
   * minus this is the wait for a transaction slot and the rebuild epoch, the retries, and the
   * offset commit.
   */
  readonly transactionMs: number | undefined;
  /** True when the batch lay entirely below the cached checkpoint: no database round trip. */
  readonly fastPath: boolean;
  /**
   * True when, on top of that, the client did not decode the batch's records (KafkaJS patch 009,
   * patches/README.md): a replay's record batches below the cached checkpoint.
   */
  readonly undecoded: boolean;
  readonly offsetCommit: CommitResult;
}

/** Why the service ended: a requested stop, or a fatal error (exit non-zero). */
export type ServiceOutcome =
  { readonly kind: "stopped" } | { readonly kind: "failed"; readonly error: Error };

/**
 * Runs one member of the projection's consumer group.
 * @example
 * const service = new ConsumerService({ config, projection: ledgerProjection, log });
 * await service.start();
 * process.once("SIGTERM", () => void service.stop());
 * const outcome = await service.done;
 */
export class ConsumerService {
  readonly metrics: Metrics;
  /** Resolves when the service has fully stopped, with the reason. */
  readonly done: Promise<ServiceOutcome>;
  private resolveDone!: (outcome: ServiceOutcome) => void;
  private readonly log: Logger;
  private readonly pool: pg.Pool;
  /** A one-connection pool for /readyz, so a busy main pool does not make the probe wait. */
  private readonly probePool: pg.Pool;
  /**
   * A one-connection pool for the session that holds the projection's shared advisory lock, so the
   * main pool's REPLAYABLE_DB_POOL_SIZE connections all serve transactions.
   */
  private readonly lockPool: pg.Pool;
  private readonly member: Member;
  private readonly events: MemberEvents;
  private readonly budget: MemoryBudget;
  private feed: KafkaFeed | PlatformaticFeed | undefined;
  /** Connects a new admin client (the Kafka client itself stays in src/kafka/). */
  private readonly connectAdmin: () => Promise<ClusterAdmin>;
  private admin: Promise<ClusterAdmin> | undefined;
  private readonly lagMonitor: LagMonitor;
  private readonly eventIdGauge: EventIdGauge;
  private readonly progress: ProgressReporter;
  private readonly totals: Totals = { applied: 0, duplicates: 0, deadLettered: 0 };
  private readonly abort = new AbortController();
  private readonly topics: readonly string[];
  private readonly lock: ProjectionLockSession;
  private http: HttpServer | undefined;
  private started: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private fatal: Error | undefined;
  private readonly dlq: DeadLetterSink | undefined;
  private readonly dlqForwarder: DeadLetterForwarder | undefined;
  /** The transaction runner; start() replaces it with the traced one when tracing is on. */
  private runTransaction: TransactionRunner;
  private tracing: Tracing | undefined;

  constructor(private readonly options: ConsumerServiceOptions) {
    const { config, projection } = options;
    const log = withBindings(options.log, { groupId: config.groupId, projection: projection.name });
    this.log = log;
    this.metrics = options.metrics ?? createMetrics();
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.topics = config.topics.length > 0 ? config.topics : projection.defaultTopics;
    initialiseMetrics(this.metrics, this.topics);
    [this.pool, this.probePool, this.lockPool] = createPools(config, projection.name, log);
    this.lock = this.createLock();
    const kafka = createKafka({
      brokers: config.kafka.brokers,
      clientId: config.kafka.clientId,
      log,
      security: config.kafka.security,
      oauthBearerProvider: options.oauthBearerProvider,
    });
    // The admin calls and the DLQ publisher on the client KAFKA_CLIENT chose, as the feed (createMember).
    const choice = {
      kafka: config.kafka,
      clientId: config.kafka.clientId,
      kafkajs: kafka,
      oauthBearerProvider: options.oauthBearerProvider,
    };
    this.connectAdmin = () => connectClusterAdmin(choice);
    if (config.dlqTopic !== undefined) this.dlq = deadLetterSink(choice, config.dlqTopic);
    this.lagMonitor = this.createLagMonitor();
    this.eventIdGauge = new EventIdGauge({
      metrics: this.metrics,
      pool: this.pool,
      projection: projection.name,
      log,
    });
    this.progress = this.createProgress();
    if (this.dlq !== undefined)
      this.dlqForwarder = new DeadLetterForwarder({
        sink: this.dlq,
        projection: projection.name,
        pool: this.pool,
        metrics: this.metrics,
        log,
      });
    this.events = new MemberEvents(log);
    this.budget = this.createBudget();
    this.runTransaction = this.transactionRunner(undefined);
    this.observe(this.events);
    this.member = this.createMember(kafka);
  }

  /**
   * The projection's advisory lock session on its own pool (REPLAYABLE_DB_LOCK_CHECK_INTERVAL_MS,
   * REPLAYABLE_DB_KEEPALIVE_MS): losing the lock for good stops the member.
   */
  private createLock(): ProjectionLockSession {
    const { config, projection } = this.options;
    return new ProjectionLockSession({
      pool: this.lockPool,
      projection: projection.name,
      retry: { initialMs: config.retryInitialMs, maxMs: config.retryMaxMs },
      checkIntervalMs: config.dbLockCheckIntervalMs,
      keepAliveMs: config.dbKeepAliveMs,
      signal: this.abort.signal,
      onMustStop: (error) => this.fail(error),
      log: this.log,
    });
  }

  /** `run`'s progress line (REPLAYABLE_PROGRESS_INTERVAL_MS), with a blue/green version's context. */
  private createProgress(): ProgressReporter {
    const { config, projection } = this.options;
    return new ProgressReporter({
      intervalMs: config.progressIntervalMs,
      log: this.log,
      totals: () => ({ ...this.totals }),
      remainingLag: () => this.lagMonitor.remainingLag(),
      logPassed: () => this.lagMonitor.logPassed(),
      ...versionContext(projection, this.pool),
    });
  }

  /**
   * The memory budget (REPLAYABLE_MEMORY_BUDGET_BYTES): each plan it makes sets the feed's fetch
   * limits, is told to the observers (`memoryPlanned`: gauges, an info line) and bounds the
   * transactions planned from then on.
   */
  private createBudget(): MemoryBudget {
    const { config } = this.options;
    return new MemoryBudget({
      budgetBytes: config.memoryBudgetBytes,
      prefetch: config.prefetch,
      concurrently: config.partitionsConsumedConcurrently,
      caps: { maxBatchBytes: config.maxBatchBytes, maxBatchRecords: config.maxBatchRecords },
      apply: (plan, assignedPartitions) => {
        this.feed?.setFetchLimits(fetchLimitsOf(plan));
        this.events.emit("memoryPlanned", { ...plan, assignedPartitions });
      },
    });
  }

  /** The member's per-partition lag gauges and stall detection, refreshed every REPLAYABLE_LAG_REFRESH_MS. */
  private createLagMonitor(): LagMonitor {
    const { config, projection } = this.options;
    return new LagMonitor({
      metrics: this.metrics,
      groupId: config.groupId,
      projection: projection.name,
      topics: this.topics,
      admin: () => this.adminClient(),
      pool: this.pool,
      intervalMs: config.lagRefreshMs,
      stallTimeoutMs: config.stallTimeoutMs,
      log: this.log,
    });
  }

  /**
   * The member over the feed of KAFKA_CLIENT (KafkaJS by default, or @platformatic/kafka, which
   * loads the library only when the member starts): the Kafka client stays in src/kafka/.
   */
  private createMember(kafka: ReturnType<typeof createKafka>): Member {
    const { config } = this.options;
    const plan = this.budget.plan;
    const common = {
      kafka,
      groupId: config.groupId,
      topics: this.topics,
      topicsSource: this.topicsSource(),
      sessionTimeoutMs: config.sessionTimeoutMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      fetchLimits: fetchLimitsOf(plan),
      log: this.log,
    };
    const feed =
      config.kafka.client === "platformatic"
        ? new PlatformaticFeed({
            ...common,
            brokers: config.kafka.brokers,
            clientId: config.kafka.clientId,
            security: platformaticSecurity(config.kafka.security, this.options.oauthBearerProvider),
            groupProtocol: config.kafka.groupProtocol,
          })
        : new KafkaFeed({ ...common, partitionsConsumedConcurrently: config.partitionsConsumedConcurrently });
    this.feed = feed;
    return new Member({
      feed,
      events: this.events,
      workers: this.workerSettings(),
      // Read on the lock's session, proof that no rebuild ran since the join (docs/design.md).
      epochSession: this.lock,
      log: this.log,
    });
  }

  /** Each transaction on a pooled connection; a span of `tracing` when given. */
  private transactionRunner(tracing: Tracing | undefined): TransactionRunner {
    const { config, projection } = this.options;
    return poolTransactionRunner({
      pool: this.pool,
      projection,
      lockTimeoutMs: config.lockTimeoutMs,
      maxRecordBytes: config.maxRecordBytes,
      maxRecordHeaders: config.maxRecordHeaders,
      tracing: tracing === undefined ? undefined : { tracing, groupId: config.groupId },
    });
  }

  /** What every partition worker shares: the transaction runner, slots, limits and retry timing. */
  private workerSettings(): WorkerSettings {
    const { config } = this.options;
    return {
      runTransaction: (request) => this.runTransaction(request),
      // At most REPLAYABLE_PARTITIONS_CONCURRENTLY transactions at once (back-off waits hold none).
      slots: pLimit(config.partitionsConsumedConcurrently),
      limits: () => this.budget.transactionLimits(),
      timing: { initialMs: config.retryInitialMs, maxMs: config.retryMaxMs },
      prefetch: config.prefetch,
      currentHighWatermark: (tp) => this.currentHighWatermark(tp),
    };
  }

  /** Subscribes the observers to the member's events, in the order they are told. */
  private observe(events: MemberEvents): void {
    const { onAssignment, onBatchCommitted } = this.options;
    // First: a new assignment's plan is applied (the feed's fetch limits) before anyone hears of it.
    events
      .on("assigned", (event) => this.budget.assigned(assignedCount(event.assignment)))
      .on("batchCommitted", (event) => this.budget.observe(event))
      .on("memoryPlanned", (event) =>
        this.log.info({ ...event, budgetBytes: this.options.config.memoryBudgetBytes }, "memory plan"),
      );
    if (onAssignment !== undefined) events.on("assigned", (event) => onAssignment(event.assignment));
    observeMetrics(events, this.metrics);
    this.lagMonitor.observe(events);
    this.eventIdGauge.observe(events);
    this.dlqForwarder?.observe(events);
    events
      .on("assigned", (event) => void this.checkAssignment(event.assignment))
      .on("batchCommitted", (event) => {
        addTotals(this.totals, event);
        this.log.debug(
          {
            topic: event.topic,
            partition: event.partition,
            nextOffset: event.result.nextOffset,
            applied: event.result.applied,
            duplicates: event.result.duplicates,
            deadLettered: event.result.deadLettered.length,
            commit: event.offsetCommit,
          },
          "batch committed",
        );
      })
      .on("fatal", (event) => this.fail(event.error));
    if (onBatchCommitted !== undefined)
      events.on("batchCommitted", (event) => onBatchCommitted(batchCommitted(event)));
  }

  /**
   * What this member needs of Kafka (its group and topics, Read on both), as the start-up check and
   * `reportedError` (src/cli/common.ts) name it in KAFKA_AUTHENTICATION / KAFKA_AUTHORIZATION errors.
   */
  get kafkaAccess(): FailureContext {
    const { config } = this.options;
    return {
      security: config.kafka.security,
      brokers: config.kafka.brokers,
      groupId: config.groupId,
      groupOperation: "Read",
      topics: this.topics,
      topicOperations: ["Read"],
    };
  }

  /** The port /metrics listens on (after start), useful when the configured port is 0. */
  get httpPort(): number | undefined {
    return this.http?.port;
  }

  /**
   * Starts tracing when it is on (only then is OpenTelemetry loaded), takes the projection's
   * shared advisory lock (refused while a rebuild holds it), starts the HTTP server, connects the
   * DLQ producer (when configured) and joins the consumer group.
   * First checks the Kafka login, TLS and the member's ACLs (docs/security.md), so a refusal fails
   * here instead of looping in the consumer's restarts.
   * @throws ReplayableError KAFKA_AUTHENTICATION or KAFKA_AUTHORIZATION (src/kafka/accessCheck.ts).
   * @throws ReplayableError PROJECTION_LOCKED when a rebuild of the projection is running.
   * @throws ReplayableError CONFIG_INVALID when a topic or the DLQ topic does not exist, or the
   *   DLQ topic is one of the consumed topics.
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      const { config } = this.options;
      const log = this.log;
      if (config.dlqTopic !== undefined && this.topics.includes(config.dlqTopic)) {
        throw new ReplayableError(
          "CONFIG_INVALID",
          `invalid configuration:\n  REPLAYABLE_DLQ_TOPIC=${config.dlqTopic}: must not be one of the consumed topics (${this.topics.join(", ")}): the consumer would read its own dead letters`,
        );
      }
      // Loads OpenTelemetry only when tracing is on (src/tracing/tracing.ts).
      this.tracing = await startTracing({
        tracesExporter: config.tracesExporter,
        tracerProvider: this.options.tracerProvider,
        log,
      });
      if (this.tracing !== undefined) this.runTransaction = this.transactionRunner(this.tracing);
      await checkKafkaAccess({
        ...this.kafkaAccess,
        clientId: config.kafka.clientId,
        log,
        oauthBearerProvider: this.options.oauthBearerProvider,
        writeTopic: config.dlqTopic,
      });
      await this.lock.take();
      // Holding the shared lock: a conversion to versioned (which takes it exclusively) is either
      // done, and seen here, or cannot start until this member stops.
      await this.refuseIfVersioned();
      if (this.options.http !== false) await this.startHttp();
      // Before any record is read: prune, status and rebuild then know every topic it consumes.
      // Only topics that exist (the feed checks them too): a refused run's misspelt topic would be
      // kept as consumed, and status would warn of it as gone.
      await this.refuseMissingTopics();
      await recordProjectionTopics(this.pool, this.options.projection.name, this.topics);
      // Counted before the first batch, so the gauge starts exact (see EventIdGauge).
      await this.eventIdGauge.start();
      await this.dlq?.start();
      // A stop requested while starting wins: never join the group after stop() began.
      if (this.abort.signal.aborted) return;
      await this.member.start();
      this.lagMonitor.start();
      this.progress.start();
      log.info({ topics: this.topics }, "consumer started");
    })();
    return this.started;
  }

  /** Where the consumed topics' names came from, for the error naming one that does not exist. */
  private topicsSource(): string {
    return this.options.config.topics.length > 0
      ? "REPLAYABLE_TOPICS, --topic or the config file's topics"
      : `the default topics of projection ${this.options.projection.name}; name others with --topic`;
  }

  /**
   * Refuses the start when a consumed topic does not exist on the cluster.
   * @throws ReplayableError CONFIG_INVALID naming the topics and where their names came from
   *   ({@link missingTopicsError}).
   */
  private async refuseMissingTopics(): Promise<void> {
    const existing = new Set(await (await this.adminClient()).listTopics());
    const missing = this.topics.filter((t) => !existing.has(t));
    if (missing.length > 0) throw missingTopicsError(missing, this.topicsSource());
  }

  /** Serves /metrics, /healthz and /readyz (REPLAYABLE_METRICS_*), warning of basic auth over plain HTTP. */
  private async startHttp(): Promise<void> {
    const { config } = this.options;
    const log = this.log;
    this.http = await startHttpServer({
      host: config.metrics.host,
      port: config.metrics.port,
      registry: this.metrics.registry,
      readiness: () => this.readiness(),
      webConfigFile: config.metrics.webConfigFile,
    });
    const { scheme, basicAuth, port } = this.http;
    log.info({ host: config.metrics.host, scheme, basicAuth, port }, "serving /metrics, /healthz, /readyz");
    if (basicAuth && scheme === "http")
      log.warn(
        { setting: "REPLAYABLE_METRICS_WEB_CONFIG_FILE" },
        "basic_auth_users without tls_server_config: the passwords cross the network in clear text; add tls_server_config",
      );
  }

  /**
   * Refuses to run a plain projection's code for a projection the database holds as versioned
   * (`migrate --convert-to-versioned`, or a projection declared versioned before): its member
   * would apply records under the plain dedupe key and group, beside version 1's, and apply them
   * twice (docs/replay.md "Converting a plain projection"). A version's own instance
   * (`<name>@v<N>`) is not checked.
   * @throws ReplayableError CONFIG_INVALID naming the live version and the fix.
   */
  private async refuseIfVersioned(): Promise<void> {
    const { name } = this.options.projection;
    if (name.includes("@")) return;
    // A plain projection's runtime role needs no grant on the registry (docs/security.md): one
    // that may not read it is not checked; GRANT SELECT ON replayable.projection_versions makes it.
    const registry = await this.probePool.query<{ readable: boolean }>(
      // has_table_privilege is strict: no registry (a database migrated before it) gives null.
      "SELECT coalesce(has_table_privilege(to_regclass('replayable.projection_versions'), 'SELECT'), false) AS readable",
    );
    if (registry.rows[0]?.readable !== true) {
      this.log.debug("the role may not read replayable.projection_versions: not checked for versions");
      return;
    }
    const result = await this.probePool.query<{ version: number; state: string }>(
      "SELECT version, state FROM replayable.projection_versions WHERE projection = $1 ORDER BY version",
      [name],
    );
    if (result.rows.length === 0) return;
    const live = result.rows.find((r) => r.state === "live");
    throw new ReplayableError(
      "CONFIG_INVALID",
      `projection ${name} is versioned (blue/green) in this database (${live === undefined ? "no live version" : `version ${live.version} is live`}), but this code declares it plain: a plain member would apply records under the plain dedupe key and group, beside the version's, and apply them twice. Run the versioned code (defineProjection({ versioned: true }), unqualified table names); nothing was read`,
      { context: { projection: name, versions: result.rows } },
    );
  }

  /**
   * Stops gracefully: no new fetches, the in-flight transaction finishes and its offset is
   * committed, the member leaves the group, then the gauges' refreshers, the HTTP server and
   * the pools close (reverse order of start), and the last spans are exported (with tracing on).
   * Logs a last progress line.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort();
      const log = this.log;
      // Let a start in progress settle first: a start going on after the stop would join the group
      // and leave a member behind.
      await stopStep(log, "the start under way", () => this.started?.catch(() => undefined));
      this.progress.stop();
      // The member's own steps (the feed's) are named inside it.
      await this.member.stop().catch((error: unknown) => log.warn({ err: error }, "consumer stop failed"));
      await stopStep(log, "the dead-letter forwarder's stop", () => this.dlqForwarder?.stop());
      await stopStep(log, "the DLQ producer's stop", () =>
        this.dlq?.stop().catch((error: unknown) => log.warn({ err: error }, "DLQ producer stop failed")),
      );
      if (this.started !== undefined && this.options.config.progressIntervalMs > 0)
        await stopStep(log, "the last progress line (it reads the lag)", () => this.progress.report());
      await stopStep(log, "the gauges' refreshers", async () => {
        await this.eventIdGauge.stop();
        await this.lagMonitor.stop();
      });
      await stopStep(log, "the HTTP server's close", () => this.http?.close());
      await stopStep(log, "the admin client's close", () =>
        this.admin
          ?.then((admin) => admin.close())
          .catch((error: unknown) => log.warn({ err: error }, "admin client close failed")),
      );
      await stopStep(log, "the advisory lock's release (its session's query timeout bounds it)", () =>
        this.lock.release(),
      );
      await stopStep(log, "the PostgreSQL pools' end", async () => {
        await this.probePool.end().catch(() => undefined);
        await this.lockPool.end().catch(() => undefined);
        await this.pool.end().catch((error: unknown) => log.warn({ err: error }, "pool end failed"));
      });
      await stopStep(log, "the last traces' export", () => this.tracing?.shutdown());
      log.info("consumer stopped");
      this.resolveDone(this.fatal ? { kind: "failed", error: this.fatal } : { kind: "stopped" });
    })();
    return this.stopping;
  }

  /** The partition's high watermark now, from Kafka. */
  private async currentHighWatermark({ topic, partition }: TopicPartition): Promise<string | undefined> {
    const offsets = await (await this.adminClient()).topicOffsets(topic);
    return offsets.find((o) => o.partition === partition)?.highWatermark;
  }

  /**
   * The service's one admin client (the join check and the lag refresh share it), connected on
   * first use; a failed connect is forgotten, so the next call connects again. Closed by stop().
   */
  private adminClient(): Promise<ClusterAdmin> {
    if (this.admin === undefined) {
      const connecting = this.connectAdmin();
      this.admin = connecting;
      connecting.catch(() => {
        if (this.admin === connecting) this.admin = undefined;
      });
    }
    return this.admin;
  }

  private fail(error: Error): void {
    this.fatal ??= error;
    this.log.fatal({ err: error }, "consumer stopping on a fatal error");
    void this.stop();
  }

  /**
   * /readyz: ready once the member has joined the group and PostgreSQL answers `SELECT 1`
   * within {@link READINESS_TIMEOUT_MS}; checked afresh on every call, so it turns ready again
   * as soon as PostgreSQL is back. Not ready either while a partition is stalled (no progress
   * for REPLAYABLE_STALL_TIMEOUT_MS with lag, {@link LagMonitor.stallReason}).
   */
  private async readiness(): Promise<Readiness> {
    if (this.fatal) return { ready: false, reason: `stopping on a fatal error: ${this.fatal.message}` };
    if (this.stopping) return { ready: false, reason: "stopping" };
    if (!this.member.isJoined) return { ready: false, reason: "not a member of the consumer group yet" };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.probePool.query("SELECT 1"),
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${READINESS_TIMEOUT_MS} ms`)),
            READINESS_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (error) {
      return { ready: false, reason: `PostgreSQL unreachable: ${errorMessage(error)}` };
    } finally {
      clearTimeout(timer);
    }
    const stalled = this.lagMonitor.stallReason();
    if (stalled !== undefined) return { ready: false, reason: stalled };
    return { ready: true };
  }

  /**
   * On every join: each assigned partition's high watermark must be at or above the projection's
   * checkpoint, else the topic was recreated or truncated and the member stops (docs/design.md). The
   * per-batch check in applyBatch covers partitions that get records; this one also catches a
   * recreated topic that is still empty. A failed check is logged, not fatal: the batch check stays.
   */
  private async checkAssignment(assignment: Assignment): Promise<void> {
    const { projection } = this.options;
    const log = this.log;
    try {
      if (this.stopping) return;
      const admin = await this.adminClient();
      for (const [topic, partitions] of Object.entries(assignment)) {
        if (partitions.length === 0) continue;
        const checkpoints = await readCheckpoints(this.pool, projection.name, topic);
        if (checkpoints.length === 0) continue;
        const offsets = await admin.topicOffsets(topic);
        for (const partition of partitions) {
          const checkpoint = checkpoints.find((c) => c.partition === partition)?.nextOffset;
          const highWatermark = offsets.find((o) => o.partition === partition)?.highWatermark;
          if (checkpoint === undefined || highWatermark === undefined) continue;
          const error = checkpointAheadOfLog(projection.name, topic, partition, checkpoint, highWatermark);
          if (error !== undefined) {
            this.fail(error);
            return;
          }
        }
      }
    } catch (error) {
      if (this.stopping) return;
      log.warn(
        { err: error },
        "could not compare the assigned partitions' high watermarks with the checkpoints",
      );
    }
  }
}

/** How long /readyz waits for PostgreSQL's answer (or a connection), ms. */
const READINESS_TIMEOUT_MS = 3000;

/**
 * The main pool (REPLAYABLE_DB_POOL_SIZE), the /readyz probe's and the advisory lock's. Every
 * connection has TCP keepalive and every query a client-side deadline (REPLAYABLE_DB_QUERY_TIMEOUT_MS;
 * the probe's: READINESS_TIMEOUT_MS), so no wait on a silent connection lasts forever; the
 * transactions' sessions also get `statement_timeout` and `idle_in_transaction_session_timeout`, so
 * the server ends a transaction whose client went silent, and its row locks (docs/design.md
 * "Faults"). The lock session gets no server-side timeout: its health query
 * ({@link ProjectionLockSession}) bounds it, and keeps any `idle_session_timeout` longer than its
 * interval from ending it.
 */
function createPools(config: Config, projection: string, log: Logger): [pg.Pool, pg.Pool, pg.Pool] {
  const onIdleError = (error: Error) =>
    log.warn({ err: error }, "idle PostgreSQL connection failed; the pool replaces it");
  const keepAliveInitialDelayMs = config.dbKeepAliveMs;
  const pool = createPool(
    {
      connectionString: config.databaseUrl,
      max: config.dbPoolSize,
      applicationName: `replayable:${projection}`,
      keepAliveInitialDelayMs,
      queryTimeoutMs: config.dbQueryTimeoutMs,
      statementTimeoutMs: config.dbQueryTimeoutMs,
      idleInTransactionTimeoutMs: config.dbIdleInTransactionTimeoutMs,
    },
    onIdleError,
  );
  const probePool = createPool(
    {
      connectionString: config.databaseUrl,
      max: 1,
      connectionTimeoutMs: READINESS_TIMEOUT_MS,
      applicationName: `replayable:${projection}:readyz`,
      keepAliveInitialDelayMs,
      // A probe query that never answers must not keep the probe's only connection checked out.
      queryTimeoutMs: READINESS_TIMEOUT_MS,
    },
    () => undefined,
  );
  const lockPool = createPool(
    {
      connectionString: config.databaseUrl,
      max: 1,
      applicationName: `replayable:${projection}:lock`,
      keepAliveInitialDelayMs,
      queryTimeoutMs: config.dbQueryTimeoutMs,
    },
    onIdleError,
  );
  return [pool, probePool, lockPool];
}

/** The partitions of an assignment. */
function assignedCount(assignment: Assignment): number {
  return Object.values(assignment).reduce((n, partitions) => n + partitions.length, 0);
}

/** The running totals that progress lines report. */
type Totals = { -readonly [K in keyof ProgressTotals]: ProgressTotals[K] };

function addTotals(totals: Totals, event: TransactionCommitted): void {
  const { result } = event;
  totals.applied += result.applied;
  totals.duplicates += result.duplicates.offset + result.duplicates.event_id;
  totals.deadLettered += result.deadLettered.length;
}

/** The feed's fetch limits of a memory plan. */
function fetchLimitsOf(plan: MemoryPlan): FetchLimits {
  return {
    maxBytesPerPartition: plan.fetchBytesPerPartition,
    maxBytes: plan.fetchMaxBytes,
    maxBytesPerPartitionBelowFloor: plan.replayFetchBytesPerPartition,
  };
}

/** The public {@link BatchCommitted} of a member event. */
function batchCommitted(event: TransactionCommitted): BatchCommitted {
  return {
    topic: event.topic,
    partition: event.partition,
    firstOffset: event.firstOffset,
    lastOffset: event.lastOffset,
    records: event.records,
    applied: event.result.applied,
    duplicates: event.result.duplicates,
    deadLettered: event.result.deadLettered.length,
    durationMs: event.durationMs,
    transactionMs: event.transactionMs,
    fastPath: event.fastPath,
    undecoded: event.undecoded,
    offsetCommit: event.offsetCommit,
  };
}

/**
 * A blue/green version's progress fields (docs/replay.md "Progress"): its number and its state as
 * the registry says when the line is logged (a promote while the member runs shows); nothing for
 * a plain projection.
 */
function versionContext(
  projection: Projection<unknown>,
  pool: pg.Pool,
): { context?: () => Promise<Record<string, unknown>> } {
  const { baseName, version } = projection as Partial<VersionedInstance>;
  if (baseName === undefined || version === undefined) return {};
  return {
    context: async () => {
      const row = (await selectVersions(pool, baseName)).find((v) => v.version === version);
      return { version, versionState: row?.state ?? "unknown" };
    },
  };
}
