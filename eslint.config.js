// ESLint flat config: typescript-eslint's type-checked rules over src/, test/ and bench/.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: [
      "dist/**",
      "node_modules/**",
      ".cache/**",
      ".data/**",
      "drizzle/**",
      "**/*.mjs",
      "eslint.config.js",
      "bin/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/restrict-template-expressions": [
        "error",
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  {
    // A function of the product reads on one screen: longer ones are split into named steps.
    files: ["src/**/*.ts"],
    rules: { "max-lines-per-function": ["error", { max: 60 }] },
  },
  {
    // The engine knows the feed interface (src/feed.ts), never the Kafka client: KafkaJS stays
    // behind src/kafka/, so another client can be added there without touching the engine.
    files: ["src/engine/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["kafkajs", "kafkajs/*", "@platformatic/kafka", "@platformatic/kafka/*"],
              message: "src/engine/ does not import a Kafka client: use the Feed interface of src/feed.ts.",
            },
          ],
        },
      ],
    },
  },
  {
    // Traces are off by default and then nothing of OpenTelemetry may be loaded: only
    // src/tracing/otel/, which src/tracing/tracing.ts loads with import() when tracing is on,
    // imports it; elsewhere its types only (erased). docs/observability.md.
    files: ["src/**/*.ts"],
    ignores: ["src/tracing/otel/**"],
    rules: {
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@opentelemetry/*"],
              allowTypeImports: true,
              message:
                "OpenTelemetry is loaded only when tracing is on: import its types here, its code in src/tracing/otel/ (loaded by src/tracing/tracing.ts).",
            },
          ],
        },
      ],
    },
  },
);
