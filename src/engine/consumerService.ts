/**
 * The consumer service: a consumer group member that applies each partition's batches with
 * {@link applyBatch} and commits Kafka offsets only after the database COMMIT (DESIGN.md step 8).
 * Replay fast path: a batch entirely below the partition's checkpoint as this member last committed
 * it ({@link CheckpointCache}) is counted as duplicates without a database round trip.
 * `start()` and `stop()` are idempotent; stop runs in reverse order of start.
 */
import { setTimeout as sleep } from "node:timers/promises";
import pLimit, { type LimitFunction } from "p-limit";
import type pg from "pg";
import type { Logger } from "pino";
import type { Config } from "../config.js";
import { createPool } from "../db/pool.js";
import { classifyPgError, ReplayableError, errorMessage } from "../errors.js";
import { failpoint } from "../failpoints.js";
import { KafkaAdmin } from "../kafka/admin.js";
import { createKafka } from "../kafka/client.js";
import type { OauthBearerProvider } from "../kafkaSecurity.js";
import { DeadLetterPublisher } from "../kafka/deadLetterPublisher.js";
import { withBindings } from "../logger.js";
import {
  GroupConsumer,
  type BatchControl,
  type CommitResult,
  type PartitionBatch,
} from "../kafka/groupConsumer.js";
import { createMetrics, initialiseMetrics, type DuplicateKeyKind, type Metrics } from "../metrics/metrics.js";
import { startHttpServer, type HttpServer, type Readiness } from "../metrics/server.js";
import { nextOffset, offsetDistance } from "../offsets.js";
import type { Projection } from "../projection.js";
import type { KafkaRecord } from "../record.js";
import { advisoryUnlock, projectionLock, tryAdvisoryLock } from "../sql/advisoryLocks.js";
import { markDeadLettersPublished } from "../sql/markDeadLettersPublished.js";
import { readCheckpoints } from "../sql/readCheckpoints.js";
import { applyBatch, type BatchResult } from "./applyBatch.js";
import { backoffDelayMs } from "./backoff.js";
import { checkpointAheadOfLog } from "./checkpointAheadOfLog.js";
import { CheckpointCache } from "./checkpointCache.js";
import { chunkRecords } from "./chunk.js";
import { EventIdGauge } from "./eventIdGauge.js";
import { LagMonitor } from "./lagMonitor.js";
import { ProgressReporter } from "./progressReporter.js";

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
  readonly onAssignment?: (assignment: Readonly<Record<string, readonly number[]>>) => void;
  /**
   * The OAUTHBEARER token provider, for KAFKA_SASL_MECHANISM=OAUTHBEARER: called on every
   * (re)authentication; overrides the config file's `kafkaOauthBearerProvider` (docs/security.md).
   */
  readonly oauthBearerProvider?: OauthBearerProvider;
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
  /** True when the batch lay entirely below the cached checkpoint: no database round trip. */
  readonly fastPath: boolean;
  readonly offsetCommit: CommitResult;
}

/**
 * Consecutive failed transactions of a partition after which it counts as paused
 * (`replayable_paused_partitions`, the "partition paused" log line): a serialization failure or
 * deadlock clears within these; more means an outage or a fault. The partition is not fetched
 * while it waits (its lane is full), and every other partition keeps going either way.
 */
export const ATTEMPTS_BEFORE_PAUSE = 3;

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
   * main pool's REPLAYABLE_DB_POOL_SIZE connections all serve transactions (regression: with a
   * pool of 1 the lock held the only connection and nothing was ever applied).
   */
  private readonly lockPool: pg.Pool;
  private readonly consumer: GroupConsumer;
  private readonly kafka: ReturnType<typeof createKafka>;
  private admin: Promise<KafkaAdmin> | undefined;
  private readonly lagMonitor: LagMonitor;
  private readonly eventIdGauge: EventIdGauge;
  private readonly progress: ProgressReporter;
  private readonly totals = { applied: 0, duplicates: 0, deadLettered: 0 };
  private readonly abort = new AbortController();
  private readonly topics: readonly string[];
  private lockClient: pg.PoolClient | undefined;
  /** When the loss of the advisory-lock session was last logged as a warning (epoch ms). */
  private lockLossWarnedAt: number | undefined;
  /** Advisory-lock sessions lost since start (each one re-taken). */
  private lockSessionsLost = 0;
  private http: HttpServer | undefined;
  private started: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private fatal: Error | undefined;
  /** Consecutive failed transactions per `topic/partition`: the back-off exponent. */
  private readonly failures = new Map<string, number>();
  /** Partitions waiting out a back-off after {@link ATTEMPTS_BEFORE_PAUSE} failures (the paused gauge). */
  private readonly pausedKeys = new Set<string>();
  /** At most REPLAYABLE_PARTITIONS_CONCURRENTLY transactions run at once (back-off sleeps hold none). */
  private readonly transactionSlots: LimitFunction;
  private readonly dlq: DeadLetterPublisher | undefined;
  /** The replay fast path's cached checkpoints, dropped on every assignment. */
  private readonly checkpoints = new CheckpointCache();

  constructor(private readonly options: ConsumerServiceOptions) {
    const { config, projection } = options;
    const log = withBindings(options.log, { groupId: config.groupId, projection: projection.name });
    this.log = log;
    this.metrics = options.metrics ?? createMetrics();
    this.transactionSlots = pLimit(config.partitionsConsumedConcurrently);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.topics = config.topics.length > 0 ? config.topics : projection.defaultTopics;
    initialiseMetrics(this.metrics, this.topics);
    const onIdleError = (error: Error) =>
      log.warn({ err: error }, "idle PostgreSQL connection failed; the pool replaces it");
    this.pool = createPool(
      {
        connectionString: config.databaseUrl,
        max: config.dbPoolSize,
        applicationName: `replayable:${projection.name}`,
      },
      onIdleError,
    );
    this.probePool = createPool(
      {
        connectionString: config.databaseUrl,
        max: 1,
        connectionTimeoutMs: READINESS_TIMEOUT_MS,
        applicationName: `replayable:${projection.name}:readyz`,
      },
      () => undefined,
    );
    this.lockPool = createPool(
      {
        connectionString: config.databaseUrl,
        max: 1,
        applicationName: `replayable:${projection.name}:lock`,
      },
      onIdleError,
    );
    this.kafka = createKafka({
      brokers: config.kafka.brokers,
      clientId: config.kafka.clientId,
      log,
      security: config.kafka.security,
      oauthBearerProvider: options.oauthBearerProvider,
    });
    if (config.dlqTopic !== undefined) this.dlq = new DeadLetterPublisher(this.kafka, config.dlqTopic);
    this.lagMonitor = new LagMonitor({
      metrics: this.metrics,
      groupId: config.groupId,
      projection: projection.name,
      topics: this.topics,
      admin: () => this.adminClient(),
      pool: this.pool,
      intervalMs: config.lagRefreshMs,
      stallTimeoutMs: config.stallTimeoutMs,
      log,
    });
    this.eventIdGauge = new EventIdGauge({
      metrics: this.metrics,
      pool: this.pool,
      projection: projection.name,
      log,
    });
    this.progress = new ProgressReporter({
      intervalMs: config.progressIntervalMs,
      log,
      totals: () => ({ ...this.totals }),
      remainingLag: () => this.lagMonitor.remainingLag(),
    });
    this.consumer = new GroupConsumer({
      kafka: this.kafka,
      groupId: config.groupId,
      topics: this.topics,
      sessionTimeoutMs: config.sessionTimeoutMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      partitionsConsumedConcurrently: config.partitionsConsumedConcurrently,
      prefetch: config.prefetch,
      maxBytesPerPartition: config.maxBatchBytes,
      log,
      onBatch: (batch, control) => this.onBatch(batch, control),
      onAssignment: (assignment) => {
        this.checkpoints.reset();
        options.onAssignment?.(assignment);
        this.metrics.rebalances.inc();
        this.lagMonitor.assign(assignment);
        void this.checkAssignment(assignment);
      },
      onUnassigned: () => this.lagMonitor.unassignAll(),
      onCrash: (error) => this.fail(error),
    });
  }

  /** The port /metrics listens on (after start), useful when the configured port is 0. */
  get httpPort(): number | undefined {
    return this.http?.port;
  }

  /**
   * Takes the projection's shared advisory lock (refused while a rebuild holds it), starts the
   * HTTP server, connects the DLQ producer (when configured) and joins the consumer group.
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
      await this.takeProjectionLock();
      if (this.options.http !== false) {
        this.http = await startHttpServer({
          host: config.metrics.host,
          port: config.metrics.port,
          registry: this.metrics.registry,
          readiness: () => this.readiness(),
        });
        log.info({ host: config.metrics.host, port: this.http.port }, "serving /metrics, /healthz, /readyz");
      }
      // Counted before the first batch, so the gauge starts exact (see EventIdGauge).
      await this.eventIdGauge.start();
      await this.dlq?.start();
      // A stop requested while starting wins: never join the group after stop() began.
      if (this.abort.signal.aborted) return;
      await this.consumer.start();
      this.lagMonitor.start();
      this.progress.start();
      log.info({ topics: this.topics }, "consumer started");
    })();
    return this.started;
  }

  /**
   * Stops gracefully: no new fetches, the in-flight transaction finishes and its offset is
   * committed, the member leaves the group, then the gauges' refreshers, the HTTP server and
   * the pools close (reverse order of start). Logs a last progress line.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort();
      const log = this.log;
      // Let a start in progress settle first (regression: a SIGTERM right after start-up stopped
      // the consumer, then the start went on to join the group and left a member behind).
      await this.started?.catch(() => undefined);
      this.progress.stop();
      await this.consumer.stop().catch((error: unknown) => log.warn({ err: error }, "consumer stop failed"));
      await this.dlq?.stop().catch((error: unknown) => log.warn({ err: error }, "DLQ producer stop failed"));
      if (this.started !== undefined && this.options.config.progressIntervalMs > 0) this.progress.report();
      await this.eventIdGauge.stop();
      await this.lagMonitor.stop();
      await this.http?.close();
      await this.admin
        ?.then((admin) => admin.close())
        .catch((error: unknown) => log.warn({ err: error }, "admin client close failed"));
      if (this.lockClient !== undefined) {
        // Unlocked explicitly: PostgreSQL drops a session lock only when the backend exits, a moment
        // after the socket closes, and a `replay --execute` or `rebuild` right after the stop would
        // still find it held (regression test stopReleasesLock).
        await advisoryUnlock(this.lockClient, projectionLock(this.options.projection.name), true).catch(
          () => undefined,
        );
        this.lockClient.release();
        this.lockClient = undefined;
      }
      await this.probePool.end().catch(() => undefined);
      await this.lockPool.end().catch(() => undefined);
      await this.pool.end().catch((error: unknown) => log.warn({ err: error }, "pool end failed"));
      log.info("consumer stopped");
      this.resolveDone(this.fatal ? { kind: "failed", error: this.fatal } : { kind: "stopped" });
    })();
    return this.stopping;
  }

  /**
   * The service's one admin client (the join check and the lag refresh share it), connected on
   * first use; a failed connect is forgotten, so the next call connects again. Closed by stop().
   */
  /** The partition's high watermark now, from Kafka. */
  private async currentHighWatermark(topic: string, partition: number): Promise<string | undefined> {
    const offsets = await (await this.adminClient()).topicOffsets(topic);
    return offsets.find((o) => o.partition === partition)?.highWatermark;
  }

  private adminClient(): Promise<KafkaAdmin> {
    if (this.admin === undefined) {
      const connecting = KafkaAdmin.connect(this.kafka);
      this.admin = connecting;
      connecting.catch(() => {
        if (this.admin === connecting) this.admin = undefined;
      });
    }
    return this.admin;
  }

  /**
   * Takes the projection's shared advisory lock on a connection of its own, kept for the
   * service's lifetime. If that connection dies (PostgreSQL restarted), the lock is taken again
   * in the background once PostgreSQL answers; a rebuild cannot start meanwhile, as it also
   * needs the consumer group inactive.
   * @throws ReplayableError PROJECTION_LOCKED when a rebuild holds the lock.
   */
  private async takeProjectionLock(): Promise<void> {
    const { projection } = this.options;
    const client = await this.lockPool.connect();
    // A checked-out client whose connection dies emits "error": without a listener, the process crashes.
    client.on("error", (error: Error) => this.onLockConnectionLost(client, error));
    let locked = false;
    try {
      locked = await tryAdvisoryLock(client, projectionLock(projection.name), true);
    } catch (error) {
      client.release(true);
      throw error;
    }
    if (!locked) {
      client.release();
      throw new ReplayableError(
        "PROJECTION_LOCKED",
        `projection ${projection.name} is being rebuilt (another session holds its advisory lock); run again once \`replayable rebuild\` has finished`,
      );
    }
    if (this.stopping !== undefined) {
      // stop() ran while the lock was being taken again: an unreleased client would hold pool.end().
      client.release();
      return;
    }
    this.lockClient = client;
  }

  private onLockConnectionLost(client: pg.PoolClient, error: Error): void {
    if (this.lockClient !== client) return;
    this.lockClient = undefined;
    client.release(error);
    if (this.stopping !== undefined || this.fatal !== undefined) return;
    // One warning per outage: a session lost again within LOCK_LOSS_QUIET_MS of the last warning
    // (PostgreSQL restarting, sessions terminated one after another) is the same outage.
    const now = Date.now();
    this.lockSessionsLost += 1;
    if (this.lockLossWarnedAt === undefined || now - this.lockLossWarnedAt > LOCK_LOSS_QUIET_MS) {
      this.lockLossWarnedAt = now;
      this.log.warn(
        { err: error },
        "lost the PostgreSQL session holding the projection's shared advisory lock; taking it again",
      );
    } else {
      this.log.debug(
        { err: error, sessionsLost: this.lockSessionsLost },
        "lost the advisory-lock session again",
      );
    }
    void (async () => {
      const { retryInitialMs, retryMaxMs } = this.options.config;
      for (let attempt = 0; this.stopping === undefined && this.fatal === undefined; attempt++) {
        try {
          await this.takeProjectionLock();
          this.log.info(
            { sessionsLost: this.lockSessionsLost },
            "projection's shared advisory lock taken again",
          );
          return;
        } catch (lockError) {
          if (lockError instanceof ReplayableError && lockError.code === "PROJECTION_LOCKED") {
            this.fail(lockError);
            return;
          }
          try {
            await sleep(backoffDelayMs(attempt, retryInitialMs, retryMaxMs), undefined, {
              signal: this.abort.signal,
            });
          } catch {
            return;
          }
        }
      }
    })();
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
    if (!this.consumer.isJoined) return { ready: false, reason: "not a member of the consumer group yet" };
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
   * checkpoint, else the topic was recreated or truncated and the member stops (DESIGN.md). The
   * per-batch check in applyBatch covers partitions that get records; this one also catches a
   * recreated topic that is still empty. A failed check is logged, not fatal: the batch check stays.
   */
  private async checkAssignment(assignment: Readonly<Record<string, readonly number[]>>): Promise<void> {
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

  /**
   * Applies one partition's fetched batch: one transaction per chunk (REPLAYABLE_MAX_BATCH_RECORDS
   * and _BYTES), each followed by its offset commit. The last chunk covers the fetch up to
   * `throughOffset` (transaction markers and aborted records included); a fetch of markers only
   * is one transaction without records that moves the checkpoint past them.
   */
  private async onBatch(batch: PartitionBatch, control: BatchControl): Promise<void> {
    const { topic, partition, highWatermark } = batch;
    const log = this.log.child({ topic, partition });
    for (const chunk of this.chunksOf(batch)) {
      if (!control.isActive() || this.fatal) return;
      const started = process.hrtime.bigint();
      const epoch = this.checkpoints.epoch;
      const cached = this.checkpoints.checkpointCovering(
        topic,
        partition,
        chunk.throughOffset,
        highWatermark,
      );
      const result =
        cached === undefined
          ? await this.applyWithRetry(batch, chunk, control, log)
          : belowCheckpoint(chunk, cached);
      if (result === undefined) return;
      this.checkpoints.remember(topic, partition, result.checkpoint, epoch);
      await failpoint("after-db-commit");
      // DESIGN.md step 8, without holding up the partition's next transaction: KafkaJS sends the
      // offset commit on the connection its fetches use, where it can wait behind a fetch in flight
      // (a long poll of caught-up partitions). The commits of a partition still leave one after
      // another, in offset order, and a graceful stop waits for them (GroupConsumer).
      const fastPath = cached !== undefined;
      void control
        .commit(result.nextOffset)
        .then(async (commit) => {
          this.metrics.offsetCommits.inc({ result: commit });
          await failpoint("after-offset-commit");
          this.record(batch, result, commit, log);
          if (this.dlq !== undefined && result.deadLettered.length > 0) await this.publish(result, log);
          this.metrics.batchDuration.observe({ topic }, seconds(started));
          this.batchCommitted(batch, chunk, result, commit, fastPath, started, log);
        })
        .catch((error: unknown) => log.error({ err: error }, "after the offset commit: a step failed"));
    }
  }

  /**
   * The batch's transactions. Replay fast path: a batch entirely below the cached checkpoint is
   * one chunk skipped whole, with one offset commit and without converting its records.
   */
  private chunksOf(batch: PartitionBatch): Chunk[] {
    const { config } = this.options;
    const { topic, partition, throughOffset, highWatermark } = batch;
    if (
      batch.size === 0 ||
      this.checkpoints.checkpointCovering(topic, partition, throughOffset, highWatermark) !== undefined
    )
      return [
        { firstOffset: batch.firstOffset, lastOffset: batch.lastOffset, throughOffset, size: batch.size },
      ];
    const chunks = chunkRecords(batch.records, config.maxBatchRecords, config.maxBatchBytes).map(chunkOf);
    const last = chunks.pop()!;
    chunks.push({ ...last, throughOffset });
    return chunks;
  }

  private batchCommitted(
    batch: PartitionBatch,
    chunk: Chunk,
    result: BatchResult,
    commit: CommitResult,
    fastPath: boolean,
    startedNs: bigint,
    log: Logger,
  ): void {
    const hook = this.options.onBatchCommitted;
    if (hook === undefined) return;
    try {
      hook({
        topic: batch.topic,
        partition: batch.partition,
        firstOffset: chunk.firstOffset,
        lastOffset: chunk.lastOffset,
        records: chunk.size,
        applied: result.applied,
        duplicates: result.duplicates,
        deadLettered: result.deadLettered.length,
        durationMs: seconds(startedNs) * 1000,
        fastPath,
        offsetCommit: commit,
      });
    } catch (error) {
      log.warn({ err: error }, "onBatchCommitted threw; ignored");
    }
  }

  /**
   * Runs the transaction, retrying a failure that is not the record's fault (transient, or a
   * fault such as a missing table) with exponential back-off and jitter, for as long as the batch
   * is this member's (`control.signal`). The back-off grows with the partition's consecutive
   * failures and is slept outside the transaction slots, so the other partitions keep every slot
   * and keep being fetched (their lanes are apart); from the {@link ATTEMPTS_BEFORE_PAUSE}th
   * failure on, the partition counts as paused (`replayable_paused_partitions`). Never
   * dead-letters.
   * @returns the committed batch, or undefined when abandoned (stopping, rebalanced, fatal).
   */
  private async applyWithRetry(
    batch: PartitionBatch,
    chunk: Chunk,
    control: BatchControl,
    log: Logger,
  ): Promise<BatchResult | undefined> {
    const key = `${batch.topic}/${batch.partition}`;
    let highWatermark = batch.highWatermark;
    let recheckedHighWatermark = false;
    for (;;) {
      if (!control.isActive() || this.fatal) return undefined;
      try {
        const result = await this.transactionSlots(() =>
          this.runTransaction(batch, chunk, highWatermark, log),
        );
        const failures = this.failures.get(key);
        if (failures !== undefined)
          log.info({ attempts: failures + 1 }, "transaction committed after retries");
        this.failures.delete(key);
        return result;
      } catch (error) {
        if (
          error instanceof ReplayableError &&
          error.code === "CHECKPOINT_AHEAD_OF_LOG" &&
          !recheckedHighWatermark
        ) {
          // The high watermark came with the fetch; a member that was paused meanwhile (GC, SIGSTOP)
          // may hold a batch older than the checkpoint another member wrote. Ask Kafka once more
          // before calling the log truncated (regression: a stale member stopped with this error),
          // and only once: a producer writing to a recreated topic keeps raising the high watermark,
          // and rechecking until it passes the checkpoint would skip its records as duplicates.
          recheckedHighWatermark = true;
          const fresh = await this.currentHighWatermark(batch.topic, batch.partition).catch(() => undefined);
          if (fresh !== undefined && offsetDistance(fresh, highWatermark) > 0n) {
            log.info(
              { fetched: highWatermark, current: fresh },
              "batch older than the checkpoint; rechecking",
            );
            highWatermark = fresh;
            continue;
          }
        }
        if (error instanceof ReplayableError && !error.canRetry) {
          this.fail(error);
          return undefined;
        }
        if (!(await this.backOff(key, chunk, error, control, log))) return undefined;
      }
    }
  }

  /** One attempt of the dedupe-then-effect transaction on a pooled connection (DESIGN.md steps 1-7). */
  private async runTransaction(
    batch: PartitionBatch,
    chunk: Chunk,
    highWatermark: string,
    log: Logger,
  ): Promise<BatchResult> {
    const { config, projection } = this.options;
    let client: pg.PoolClient | undefined;
    try {
      client = await this.pool.connect();
      // The failing query rejects too; this only keeps the "error" event from crashing the process.
      client.on("error", ignoreClientError);
      const started = process.hrtime.bigint();
      const result = await applyBatch({
        client,
        projection,
        topic: batch.topic,
        partition: batch.partition,
        records: chunk.records ?? batch.records,
        throughOffset: chunk.throughOffset,
        highWatermark,
        lockTimeoutMs: config.lockTimeoutMs,
        maxRecordBytes: config.maxRecordBytes,
        log,
      });
      client.release();
      client.removeListener("error", ignoreClientError);
      client = undefined;
      this.metrics.transactionDuration.observe({ topic: batch.topic }, seconds(started));
      return result;
    } catch (error) {
      client?.removeListener("error", ignoreClientError);
      client?.release(true);
      throw error;
    }
  }

  /**
   * Counts and logs a failed transaction, then sleeps its back-off (exponential in the
   * partition's consecutive failures, with jitter; REPLAYABLE_RETRY_INITIAL_MS to _MAX_MS).
   * @returns false when the batch was abandoned during the sleep (stop, rebalance).
   */
  private async backOff(
    key: string,
    chunk: Chunk,
    error: unknown,
    control: BatchControl,
    log: Logger,
  ): Promise<boolean> {
    const { config } = this.options;
    const { kind, reason } = classifyPgError(error);
    this.metrics.transactionRetries.inc({ reason });
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const waitMs = backoffDelayMs(failures - 1, config.retryInitialMs, config.retryMaxMs);
    const fields = {
      err: error,
      kind,
      reason,
      attempt: failures,
      retryInMs: waitMs,
      firstOffset: chunk.firstOffset,
    };
    // A fault (a bug, a missing table) needs a person; transient failures clear by themselves.
    const level = kind === "fault" ? "error" : "warn";
    const paused = failures >= ATTEMPTS_BEFORE_PAUSE;
    if (paused) {
      log[level](fields, "transaction failed; partition paused until the back-off ends");
      this.pausedKeys.add(key);
      this.metrics.pausedPartitions.set(this.pausedKeys.size);
    } else {
      log[level](fields, "transaction failed; retrying");
    }
    try {
      await sleep(waitMs, undefined, { signal: AbortSignal.any([control.signal, this.abort.signal]) });
      if (paused) log.info("partition resumed");
      return true;
    } catch {
      return false;
    } finally {
      if (paused) {
        this.pausedKeys.delete(key);
        this.metrics.pausedPartitions.set(this.pausedKeys.size);
      }
    }
  }

  /** Publishes a committed batch's dead letters to the DLQ topic; a failure is logged and counted. */
  private async publish(result: BatchResult, log: Logger): Promise<void> {
    const dlq = this.dlq!;
    const letters = result.deadLettered.map((d) => ({ ...d, projection: this.options.projection.name }));
    try {
      await dlq.publish(letters);
    } catch (error) {
      this.metrics.dlqPublishes.inc({ result: "failed" }, letters.length);
      log.warn(
        { err: error, deadLetterIds: letters.map((l) => l.id), dlqTopic: dlq.topic },
        "publishing dead letters to the DLQ topic failed; they stay in replayable.dead_letters",
      );
      return;
    }
    this.metrics.dlqPublishes.inc({ result: "published" }, letters.length);
    await markDeadLettersPublished(
      this.pool,
      letters.map((l) => l.id),
    ).catch((error: unknown) => log.warn({ err: error }, "recording published_at of dead letters failed"));
  }

  private record(batch: PartitionBatch, result: BatchResult, commit: string, log: Logger): void {
    const { topic, partition } = batch;
    const m = this.metrics;
    const duplicates = result.duplicates.offset + result.duplicates.event_id;
    if (result.applied > 0) m.applied.inc({ topic }, result.applied);
    if (result.duplicates.offset > 0) m.duplicates.inc({ topic, key: "offset" }, result.duplicates.offset);
    if (result.duplicates.event_id > 0)
      m.duplicates.inc({ topic, key: "event_id" }, result.duplicates.event_id);
    for (const d of result.deadLettered) m.deadLettered.inc({ topic, code: d.code });
    this.totals.applied += result.applied;
    this.totals.duplicates += duplicates;
    this.totals.deadLettered += result.deadLettered.length;
    this.eventIdGauge.recorded(result.eventIdsRecorded);
    this.lagMonitor.batchCommitted({
      topic,
      partition,
      highWatermark: batch.highWatermark,
      nextOffset: result.nextOffset,
      checkpoint: result.checkpoint,
      offsetCommitted: commit === "committed",
    });
    log.debug(
      {
        nextOffset: result.nextOffset,
        applied: result.applied,
        duplicates: result.duplicates,
        deadLettered: result.deadLettered.length,
        commit,
      },
      "batch committed",
    );
  }
}

/** Listener for the "error" event of a checked-out client while a query of ours runs on it. */
function ignoreClientError(): void {}

/**
 * A lost advisory-lock session within this long of the last one logged as a warning belongs to the
 * same outage and is logged at debug, ms.
 */
const LOCK_LOSS_QUIET_MS = 60_000;

/** How long /readyz waits for PostgreSQL's answer (or a connection), ms. */
const READINESS_TIMEOUT_MS = 3000;

/**
 * One transaction's share of a fetched batch; `records` is absent for a whole batch the fast path
 * may skip (and for a fetch of transaction markers only). `throughOffset` is the last offset the
 * transaction covers: its last record's, or for the batch's last chunk the end of the fetch.
 */
interface Chunk {
  readonly firstOffset: string;
  readonly lastOffset: string;
  readonly throughOffset: string;
  readonly size: number;
  readonly records?: readonly KafkaRecord[];
}

function chunkOf(records: readonly KafkaRecord[]): Chunk {
  const lastOffset = records[records.length - 1]!.offset;
  return {
    firstOffset: records[0]!.offset,
    lastOffset,
    throughOffset: lastOffset,
    size: records.length,
    records,
  };
}

/** The result of a batch the replay fast path skipped: every record is an offset duplicate. */
function belowCheckpoint(chunk: Chunk, checkpoint: string): BatchResult {
  return {
    nextOffset: nextOffset(chunk.throughOffset),
    checkpoint,
    applied: 0,
    duplicates: { offset: chunk.size, event_id: 0 },
    deadLettered: [],
    eventIdsRecorded: 0,
  };
}

function seconds(startedNs: bigint): number {
  return Number(process.hrtime.bigint() - startedNs) / 1e9;
}
