/**
 * The steps of a graceful stop, named in the log while one waits. A stop waits on the network: a
 * JoinGroup parked at the coordinator until the rebalance ends (a member that died without leaving
 * holds it for its session timeout), an offset commit or a LeaveGroup queued behind that JoinGroup
 * on the coordinator's connection (Kafka answers a connection's requests in order), a request to a
 * broker that went silent (bounded by the request timeout). Without a name, the only line was the
 * shutdown timeout's "graceful stop timed out" (REPLAYABLE_SHUTDOWN_TIMEOUT_MS).
 */
import type { Logger } from "pino";

/** How often a stop step still waiting is logged, ms. */
export const STOP_STEP_WARN_MS = 5000;

/**
 * Runs `work` and awaits what it returns (a value or `undefined` as well as a promise), logging at warn every `everyMs` while it waits: `graceful stop: still waiting for
 * <step>`, with `step` and `waitingMs` (ms since the step began). Nothing is logged for a step that
 * ends sooner. The timer never keeps the process alive.
 * @param step what is awaited, as a phrase after "waiting for", e.g. "the transactions in flight".
 * @returns what `work` resolves to; rejects as it does (a throw of `work` included).
 */
export async function stopStep<T>(
  log: Logger,
  step: string,
  work: () => PromiseLike<T> | T,
  everyMs: number = STOP_STEP_WARN_MS,
): Promise<T> {
  const began = performance.now();
  const timer = setInterval(() => {
    log.warn(
      { step, waitingMs: Math.round(performance.now() - began) },
      `graceful stop: still waiting for ${step}`,
    );
  }, everyMs);
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
