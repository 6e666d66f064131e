// npm `postinstall`: applies patches/ to node_modules with patch-package (patches/README.md says
// what each patch fixes). Runs when this package is the project being installed (`npm ci` or
// `npm install` in a checkout, the Docker build) and fails the install when a patch does not apply.
// Installed as a dependency of another project it does nothing: the published package bundles its
// patched KafkaJS and @platformatic/kafka (`bundleDependencies`), and patch-package is a development
// dependency.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { sep } from "node:path";

if (process.cwd().split(sep).includes("node_modules")) process.exit(0);
if (!existsSync("patches")) {
  console.error(
    "replayable postinstall: patches/ is missing; copy it before `npm ci` (see patches/README.md)",
  );
  process.exit(1);
}
const result = spawnSync("patch-package", ["--error-on-fail"], {
  stdio: "inherit",
  shell: process.platform === "win32",
});
process.exit(result.status ?? 1);
