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

/** Creates a KafkaJS client whose logs go to `log` (namespace and broker context kept). */
export function createKafka(options: KafkaClientOptions): Kafka {
  const kafkaLog = options.log.child({ component: "kafkajs" });
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    connectionTimeout: options.connectionTimeoutMs ?? 3000,
    logLevel: logLevel.INFO,
    logCreator:
      () =>
      ({ namespace, level, log }: LogEntry) => {
        const { message, timestamp: _t, logger: _l, ...extra } = log;
        const fields = { namespace, ...extra };
        if (level === logLevel.ERROR) kafkaLog.error(fields, message);
        else if (level === logLevel.WARN) kafkaLog.warn(fields, message);
        else if (level === logLevel.INFO) kafkaLog.info(fields, message);
        else kafkaLog.debug(fields, message);
      },
  });
}
