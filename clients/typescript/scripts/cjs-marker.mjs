// dist/cjs holds the CommonJS build under a package whose "type" is "module": this marker makes
// Node (and TypeScript, for the .d.ts files beside it) read that directory as CommonJS.
import { writeFileSync } from "node:fs";

writeFileSync(new URL("../dist/cjs/package.json", import.meta.url), JSON.stringify({ type: "commonjs" }) + "\n");
