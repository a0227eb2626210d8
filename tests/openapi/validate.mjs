// Validates orchestrator/api/openapi.yaml with a real OpenAPI validator
// (@apidevtools/swagger-parser: schema of the document itself, and every $ref resolves).
// Usage: node tests/openapi/validate.mjs [path/to/openapi.yaml]
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const require = createRequire(join(root, "dashboards", "package.json"));
let SwaggerParser;
try {
  SwaggerParser = require("@apidevtools/swagger-parser");
} catch (e) {
  console.error("openapi: @apidevtools/swagger-parser is missing: run scripts/install-deps.sh " +
                "(its npm step installs dashboards/ devDependencies)");
  process.exit(1);
}
const file = process.argv[2] || join(root, "orchestrator", "api", "openapi.yaml");
try {
  const api = await SwaggerParser.validate(file);
  const ops = Object.values(api.paths).reduce((n, p) => n + Object.keys(p).length, 0);
  console.log(`openapi: ${file} is valid OpenAPI ${api.openapi}: ${ops} operations`);
} catch (e) {
  console.error(`openapi: ${file} is NOT valid: ${e.message}`);
  process.exit(1);
}
