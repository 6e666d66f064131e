/**
 * The admin client and the DLQ publisher of the Kafka client KAFKA_CLIENT chose (issue 30):
 * KafkaJS (the default) or @platformatic/kafka, which is loaded only when chosen. The member's feed
 * is chosen in src/engine/consumerService.ts. What stays on KafkaJS whichever is chosen: the
 * start-up access check (src/kafka/accessCheck.ts), `replayable produce` and reading a topic back.
 */
import type { Kafka } from "kafkajs";
import type { Config } from "../config.js";
import { KafkaAdmin, type ClusterAdmin } from "./admin.js";
import { DeadLetterPublisher, type DeadLetterSink } from "./deadLetterPublisher.js";
import { loadPlatformaticKafka } from "./platformatic/loadClient.js";
import { PlatformaticAdmin } from "./platformatic/platformaticAdmin.js";
import { PlatformaticDeadLetterPublisher } from "./platformatic/platformaticDeadLetterPublisher.js";
import { platformaticSecurity } from "./platformatic/platformaticSecurity.js";
import type { OauthBearerProvider } from "./securityConfig.js";

/** What the clients are made from: the Kafka settings, the client id to use, and the KafkaJS client. */
export interface ClientChoice {
  readonly kafka: Config["kafka"];
  readonly clientId: string;
  /** The KafkaJS client of the same settings (createKafka), used when KAFKA_CLIENT=kafkajs. */
  readonly kafkajs: Kafka;
  /** A library user's OAUTHBEARER token provider (else the config file's). */
  readonly oauthBearerProvider?: OauthBearerProvider | undefined;
}

/**
 * Connects the admin client of the chosen Kafka client.
 * @throws the client's connection error when no broker answers; ReplayableError CONFIG_INVALID when
 *   this Node.js cannot run @platformatic/kafka.
 */
export async function connectClusterAdmin(choice: ClientChoice): Promise<ClusterAdmin> {
  if (choice.kafka.client === "kafkajs") return KafkaAdmin.connect(choice.kafkajs);
  return PlatformaticAdmin.connect(await loadPlatformaticKafka(), {
    brokers: choice.kafka.brokers,
    clientId: choice.clientId,
    security: platformaticSecurity(choice.kafka.security, choice.oauthBearerProvider),
  });
}

/** The DLQ publisher of the chosen Kafka client for `topic` (connected by its `start()`). */
export function deadLetterSink(choice: ClientChoice, topic: string): DeadLetterSink {
  if (choice.kafka.client === "kafkajs") return new DeadLetterPublisher(choice.kafkajs, topic);
  return new PlatformaticDeadLetterPublisher(
    {
      brokers: choice.kafka.brokers,
      clientId: choice.clientId,
      security: platformaticSecurity(choice.kafka.security, choice.oauthBearerProvider),
    },
    topic,
  );
}
