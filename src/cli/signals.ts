/**
 * Signal handling for long-running commands, as graphile-worker does it: the first SIGTERM or
 * SIGINT asks for a graceful stop (bounded by a timeout), a second one forces the exit.
 * A second signal within {@link DUPLICATE_SIGNAL_WINDOW_MS} of the first is taken as the same
 * request delivered twice (`timeout`, a shell or a container runtime signalling both the process
 * and its process group), not as an operator insisting.
 */
import type { Logger } from "../logger.js";

/** Signals closer than this (ms) to the first one count as the same stop request. */
export const DUPLICATE_SIGNAL_WINDOW_MS = 1000;

/**
 * Calls `stop` on the first SIGTERM/SIGINT; exits 1 if it has not finished within `timeoutMs`;
 * exits 130 at once on a second signal. Returns a function removing the handlers.
 */
export function onShutdownSignals(stop: () => Promise<void>, timeoutMs: number, log: Logger): () => void {
  let signalledAt: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (signalledAt !== undefined) {
      if (Date.now() - signalledAt < DUPLICATE_SIGNAL_WINDOW_MS) {
        log.info(
          { signal },
          "signal repeated at once (delivered to the process group too?); still stopping gracefully",
        );
        return;
      }
      log.warn({ signal }, "second signal: exiting now");
      process.exit(130);
    }
    signalledAt = Date.now();
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
