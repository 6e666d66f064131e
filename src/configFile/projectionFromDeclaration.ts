/**
 * Zero-code projections: an entry of the config file's `projections` that is a declaration
 * (`{ kind: "upsert", ... }`) rather than a {@link ProjectionDefinition} becomes a projection here.
 *
 * HOOK for the upsert sink (issue 12, built on its own branch): when it is merged, parse
 * `declaration` with `upsertProjectionSpecSchema` (src/projections/upsert/) and turn the result
 * into a projection with `upsertProjection(spec)`; keep the `{ ok: false, problems }` shape so its
 * problems are reported with every other problem of the config file.
 */
import type { RegisteredProjection } from "../projections/registry.js";

/** The `kind`s of declarations the config file accepts. */
export const DECLARATION_KINDS = ["upsert"] as const;

/** A zero-code projection declared in the config file; its other fields belong to its kind. */
export interface ProjectionDeclaration {
  readonly kind: (typeof DECLARATION_KINDS)[number];
  readonly name: string;
  readonly [field: string]: unknown;
}

/** The projection a declaration makes, or the problems with it (each one line, without the entry's name). */
export type DeclarationResult =
  | { readonly ok: true; readonly projection: RegisteredProjection }
  | { readonly ok: false; readonly problems: readonly string[] };

/** Where the declaration was read: paths in it are relative to `configDir`. */
export interface DeclarationContext {
  readonly configDir: string;
}

/**
 * Turns a declaration into a projection.
 * @returns `{ ok: false, problems }` for a declaration that cannot be used, never throws.
 */
export function projectionFromDeclaration(
  declaration: ProjectionDeclaration,
  context: DeclarationContext,
): DeclarationResult {
  void context;
  return {
    ok: false,
    problems: [
      `kind "${declaration.kind}": zero-code projections are not part of this build yet; write it with defineProjection()`,
    ],
  };
}
