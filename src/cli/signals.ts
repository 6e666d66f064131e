/**
 * Signal handling for long-running commands, as graphile-worker does it: the first SIGTERM or
 * SIGINT asks for a graceful stop (bounded by a timeout), a second one forces the exit.
 */
import type { Logger } from "../logger.js";

/**
 * Calls `stop` on the first SIGTERM/SIGINT; exits 1 if it has not finished within `timeoutMs`;
 * exits 130 at once on a second signal. Returns a function removing the handlers.
 */
export function onShutdownSignals(stop: () => Promise<void>, timeoutMs: number, log: Logger): () => void {
  let signalled = false;
  const handler = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, "second signal: exiting now");
      process.exit(130);
    }
    signalled = true;
    log.info({ signal, timeoutMs }, "stopping gracefully; send the signal again to force");
    const timer = setTimeout(() => {
      log.error({ timeoutMs }, "graceful stop timed out (REPLAYABLE_SHUTDOWN_TIMEOUT_MS); exiting");
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    void stop();
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
  return () => {
    process.off("SIGTERM", handler);
    process.off("SIGINT", handler);
  };
}
