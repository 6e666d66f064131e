/** Types of bin/nodeVersion.js (plain JavaScript: the CLI's entry runs it before tsx is loaded). */
export declare const OLDEST_SUPPORTED: readonly [number, number];
export declare function unsupportedNodeWarning(version: string): string | undefined;
