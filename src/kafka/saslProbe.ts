/**
 * Which SASL mechanisms a Kafka listener asks for, learnt from one SaslHandshake request (Kafka
 * protocol API key 17, version 1) naming a mechanism no broker enables. A listener with SASL
 * answers UNSUPPORTED_SASL_MECHANISM (33) with the mechanisms it enables (its
 * SaslServerAuthenticator); one without SASL passes the request to KafkaApis, which answers
 * ILLEGAL_SASL_STATE (34). Used after a plaintext client met a TLS listener, to tell SSL from
 * SASL_SSL (src/kafka/accessCheck.ts).
 */
import type { Duplex } from "node:stream";

const SASL_HANDSHAKE = 17;
const VERSION = 1;
const UNSUPPORTED_SASL_MECHANISM = 33;
const ILLEGAL_SASL_STATE = 34;
const NONE = 0;
/** A mechanism name no broker enables, so a SASL listener lists its own. */
const PROBE_MECHANISM = "REPLAYABLE-PROBE";
const CLIENT_ID = "replayable-probe";

function int16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeInt16BE(n);
  return b;
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

function kafkaString(s: string): Buffer {
  const bytes = Buffer.from(s, "utf8");
  return Buffer.concat([int16(bytes.length), bytes]);
}

/**
 * The SaslHandshake v1 request, framed: size, then request header v1 (api key, version,
 * correlation id, client id), then the mechanism.
 */
export function saslHandshakeRequest(correlationId: number): Buffer {
  const body = Buffer.concat([
    int16(SASL_HANDSHAKE),
    int16(VERSION),
    int32(correlationId),
    kafkaString(CLIENT_ID),
    kafkaString(PROBE_MECHANISM),
  ]);
  return Buffer.concat([int32(body.length), body]);
}

/**
 * The mechanisms a SaslHandshake response (framed, response header v0) lists: `[]` for a listener
 * without SASL (ILLEGAL_SASL_STATE), the enabled ones for a SASL listener; undefined when the
 * bytes are not a whole response to `correlationId` or carry another error.
 */
export function parseSaslHandshakeResponse(frame: Buffer, correlationId: number): string[] | undefined {
  if (frame.length < 4 + 4 + 2 || frame.readInt32BE(0) !== frame.length - 4) return undefined;
  if (frame.readInt32BE(4) !== correlationId) return undefined;
  const errorCode = frame.readInt16BE(8);
  if (errorCode === ILLEGAL_SASL_STATE) return [];
  if (errorCode !== UNSUPPORTED_SASL_MECHANISM && errorCode !== NONE) return undefined;
  if (frame.length < 14) return undefined;
  const count = frame.readInt32BE(10);
  const mechanisms: string[] = [];
  let at = 14;
  for (let i = 0; i < count; i++) {
    if (at + 2 > frame.length) return undefined;
    const length = frame.readInt16BE(at);
    if (length < 0 || at + 2 + length > frame.length) return undefined;
    mechanisms.push(frame.toString("utf8", at + 2, at + 2 + length));
    at += 2 + length;
  }
  return mechanisms;
}

/**
 * Sends the probe on `socket` (connected, and past its TLS handshake if any) and reads the
 * answer: the listener's SASL mechanisms (`[]`: no SASL), or undefined when it does not answer as
 * a Kafka broker within `timeoutMs`. Destroys the socket either way.
 */
export function listenerSaslMechanisms(socket: Duplex, timeoutMs: number): Promise<string[] | undefined> {
  const correlationId = 1;
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    const done = (result: string[] | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 4 && received.length >= 4 + received.readInt32BE(0))
        done(parseSaslHandshakeResponse(received.subarray(0, 4 + received.readInt32BE(0)), correlationId));
    });
    socket.once("error", () => done(undefined));
    socket.once("close", () => done(undefined));
    socket.write(saslHandshakeRequest(correlationId));
  });
}
