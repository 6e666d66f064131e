// The Node.js lines replayable supports (package.json "engines": >= 22.15; README "Supported
// Node.js versions"). An older one, Node.js 20 above all, still runs the CLI, untested: say so.

/** The oldest supported Node.js, [major, minor]: module.registerHooks (bin/resolveHooks.js) came in 22.15. */
export const OLDEST_SUPPORTED = [22, 15];

/**
 * The warning for Node.js `version` ("20.20.2", as process.versions.node), or undefined when it is
 * supported.
 * @param {string} version
 * @returns {string | undefined}
 */
export function unsupportedNodeWarning(version) {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  const [oldestMajor, oldestMinor] = OLDEST_SUPPORTED;
  if (major > oldestMajor || (major === oldestMajor && minor >= oldestMinor)) return undefined;
  return `replayable: Node.js ${version} is not supported and untested; use Node.js ${oldestMajor}.${oldestMinor} or later (22, 24 or 26; README "Supported Node.js versions")`;
}
