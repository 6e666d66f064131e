/**
 * The server's side of a session's dead-peer detection: PostgreSQL "Connection Settings"
 * (`tcp_keepalives_idle`, `tcp_keepalives_interval`, `tcp_keepalives_count`, `tcp_user_timeout`),
 * set for this session only. Over a Unix-domain socket the server ignores them.
 */
import type pg from "pg";

/** Keepalive probes after the idle time: the backend ends when this many go unanswered. */
export const SERVER_KEEPALIVE_COUNT = 3;
/** Seconds between keepalive probes. */
export const SERVER_KEEPALIVE_INTERVAL_S = 5;

/**
 * Makes the server end this session's backend (and with it the session's advisory locks) once its
 * peer is gone: keepalive probes start after `idleMs` of silence (whole seconds, at least 1),
 * {@link SERVER_KEEPALIVE_COUNT} probes {@link SERVER_KEEPALIVE_INTERVAL_S} apart; data the server
 * sends that stays unacknowledged as long ends it too (`tcp_user_timeout`).
 * @returns the bound after which a dead peer's backend has ended, ms.
 */
export async function setServerKeepalives(client: pg.ClientBase, idleMs: number): Promise<number> {
  const idleS = Math.max(1, Math.round(idleMs / 1000));
  const boundMs = (idleS + SERVER_KEEPALIVE_COUNT * SERVER_KEEPALIVE_INTERVAL_S) * 1000;
  await client.query(
    `SELECT set_config('tcp_keepalives_idle', $1, false), set_config('tcp_keepalives_interval', $2, false),
            set_config('tcp_keepalives_count', $3, false), set_config('tcp_user_timeout', $4, false)`,
    [String(idleS), String(SERVER_KEEPALIVE_INTERVAL_S), String(SERVER_KEEPALIVE_COUNT), String(boundMs)],
  );
  return boundMs;
}
