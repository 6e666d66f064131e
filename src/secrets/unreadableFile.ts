/** Why a file could not be read, in words for a configuration error (never the file's contents). */

/**
 * The reason of a failed `readFileSync`: "no such file", "permission denied", "is a directory",
 * or "cannot be read (CODE)" from the error's Node.js `code` (Node.js docs, "Common system errors").
 */
export function unreadableFileReason(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
      return "permission denied";
    case "EISDIR":
      return "is a directory";
    default:
      return `cannot be read (${String(code)})`;
  }
}
