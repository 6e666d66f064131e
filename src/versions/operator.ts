/** Who runs a command, for the audit rows: the OS user and host. */
import { hostname, userInfo } from "node:os";

/** The OS user (falling back to USER, LOGNAME, then "unknown") and the host name. */
export function operator(): { osUser: string; host: string } {
  let osUser: string;
  try {
    osUser = userInfo().username;
  } catch {
    osUser = process.env.USER ?? process.env.LOGNAME ?? "unknown";
  }
  return { osUser, host: hostname() };
}
