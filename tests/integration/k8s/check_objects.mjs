// Reads a JSON array of Kubernetes objects on stdin and validates each one against the
// schema of its apiVersion and kind (kubernetes-models, generated from Kubernetes' OpenAPI
// definitions; the Prometheus Operator's for ServiceMonitor). Prints one line per object,
// "ok KIND NAME" or "invalid KIND NAME: why", and exits 1 if any object is invalid or of a
// kind it does not know.
import { readFileSync } from "node:fs";

const objects = JSON.parse(readFileSync(0, "utf8"));
let bad = 0;
for (const obj of objects) {
    const kind = obj.kind;
    const name = obj.metadata?.name ?? "(no name)";
    const group = obj.apiVersion === "v1" ? "v1" : obj.apiVersion;
    const module = group.startsWith("monitoring.coreos.com/")
        ? `@kubernetes-models/prometheus-operator/${group}`
        : `kubernetes-models/${group}`;
    let Model;
    try {
        Model = (await import(module))[kind];
    } catch (e) {
        Model = undefined;
    }
    if (!Model) {
        console.log(`invalid ${kind} ${name}: no schema for ${obj.apiVersion} ${kind}`);
        bad++;
        continue;
    }
    try {
        new Model(obj).validate();
        console.log(`ok ${kind} ${name}`);
    } catch (e) {
        console.log(`invalid ${kind} ${name}: ${e.message}`);
        bad++;
    }
}
process.exit(bad ? 1 : 0);
