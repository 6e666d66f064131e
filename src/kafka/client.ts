/** The KafkaJS client, with its log lines routed into our pino logger. The only folder that imports kafkajs. */
import { Kafka, logLevel, type LogEntry } from "kafkajs";
import type { Logger } from "pino";

/** Options for {@link createKafka}. */
export interface KafkaClientOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly log: Logger;
  /** Connection timeout in ms; default 3000. */
  readonly connectionTimeoutMs?: number;
}

/**
 * Creates a KafkaJS client whose log lines go to `log` as `component: "kafkajs"` with KafkaJS's
 * namespace and context (broker, groupId, topic...) kept. KafkaJS's own level follows `log.level`
 * (debug and trace turn its debug lines on), so LOG_LEVEL governs both.
 */
export function createKafka(options: KafkaClientOptions): Kafka {
  const kafkaLog = options.log.child({ component: "kafkajs" });
  const bound = kafkaLog.bindings();
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    logLevel: kafkaLogLevel(options.log.level),
    logCreator:
      () =>
      ({ namespace, level, log }: LogEntry) => {
        const { message, timestamp: _t, logger: _l, ...extra } = log;
        // Keys the logger already binds with the same value (groupId...) are not repeated.
        const fields: Record<string, unknown> = { namespace };
        for (const [key, value] of Object.entries(extra)) if (bound[key] !== value) fields[key] = value;
        if (level === logLevel.ERROR) kafkaLog.error(fields, message);
        else if (level === logLevel.WARN) kafkaLog.warn(fields, message);
        else if (level === logLevel.INFO) kafkaLog.info(fields, message);
        else kafkaLog.debug(fields, message);
      },
  });
}

/** The KafkaJS level matching a pino level (KafkaJS has no trace or fatal). */
function kafkaLogLevel(level: string): logLevel {
  switch (level) {
    case "trace":
    case "debug":
      return logLevel.DEBUG;
    case "info":
      return logLevel.INFO;
    case "warn":
      return logLevel.WARN;
    case "silent":
      return logLevel.NOTHING;
    default:
      return logLevel.ERROR;
  }
}
