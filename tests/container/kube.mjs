// tests/container/kube.mjs IMAGE PORT ADMIN_PORT — docker/k8s's Deployment, as rendered by
// `kubectl kustomize docker/k8s` (stdin), turned into what `podman kube play` can run on
// a machine with host networking only (TOOLING.md): the image pointed at the local
// build, one replica, no container ports (port mappings need bridge networking), the
// listeners moved to free loopback ports, and the probes with them. Everything else
// (the env, the probes' paths and timings, resources, both security contexts) goes
// through unchanged, so the pod podman runs is the one Kubernetes would. Prints the
// Deployment as YAML on stdout.

import fs from 'node:fs';
import yaml from 'js-yaml';

const [image, port, admin] = process.argv.slice(2);
if (!admin) throw new Error('usage: kube.mjs IMAGE PORT ADMIN_PORT < rendered.yaml');
const docs = yaml.loadAll(fs.readFileSync(0, 'utf8'));
const d = docs.find((o) => o && o.kind === 'Deployment');
d.spec.replicas = 1;
const c = d.spec.template.spec.containers[0];
c.image = image;
delete c.ports;
const env = c.env ?? [];
const set = (name, value) => {
  const e = env.find((x) => x.name === name);
  if (e) e.value = value;
  else env.push({ name, value });
};
// The manifests leave these to the image (0.0.0.0, 8080); here loopback, free ports.
set('ATTND_BIND', '127.0.0.1');
set('ATTND_PORT', String(port));
if (!env.some((e) => e.name === 'ATTND_ADMIN_PORT')) throw new Error('the Deployment sets no admin port');
set('ATTND_ADMIN_PORT', String(admin));
c.env = env;
for (const p of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
  if (!c[p]?.httpGet) throw new Error(`${p} is not an httpGet`);
  if (c[p].httpGet.port !== 'admin') throw new Error(`${p} is not on the admin port`);
  c[p].httpGet.port = Number(admin); // named ports went with c.ports
}
process.stdout.write(yaml.dump(d));
