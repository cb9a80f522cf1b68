// tests/k8s/manifests.test.mjs — docker/k8s as Kubernetes would take it: rendered by
// `kubectl kustomize` (no cluster needed), every object checked against its API schema
// (kubernetes-models), then the choices docs/deployment.md promises: probes and scrapes on the
// admin port, resources, a locked-down pod, a grace period that covers attnd's drain,
// and a Service, HPA and PodDisruptionBudget that point at the Deployment's pods.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import yaml from 'js-yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Service } from 'kubernetes-models/v1';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MODELS = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

let objects;
const one = (kind) => {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0];
};

before(() => {
  const r = spawnSync('kubectl', ['kustomize', path.join(ROOT, 'docker/k8s')], { encoding: 'utf8' });
  if (r.error?.code === 'ENOENT')
    throw new Error('kubectl is missing: install it with `apt-get install -y kubernetes-client`');
  assert.equal(r.status, 0, r.stderr);
  objects = yaml.loadAll(r.stdout).filter(Boolean);
});

test('kustomize renders a Deployment, a Service, an HPA and a PodDisruptionBudget', () => {
  assert.deepEqual(objects.map((o) => o.kind).sort(),
    ['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Service']);
});

test('every object validates against its Kubernetes schema', () => {
  for (const o of objects) {
    const Model = MODELS[`${o.apiVersion}/${o.kind}`];
    assert.ok(Model, `a schema for ${o.apiVersion} ${o.kind}`);
    assert.doesNotThrow(() => new Model(o).validate(), `${o.kind}/${o.metadata.name}`);
  }
});

test('the Deployment: 2 replicas, probes on /readyz and /healthz, resources', () => {
  const d = one('Deployment');
  assert.equal(d.spec.replicas, 2);
  const pod = d.spec.template.spec;
  assert.equal(pod.containers.length, 1);
  const c = pod.containers[0];
  assert.match(c.image, /^attnd:/);
  const http = c.ports.find((p) => p.name === 'http');
  assert.equal(http.containerPort, 8080);
  assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  assert.equal(c.livenessProbe.httpGet.path, '/healthz');
  for (const kind of ['requests', 'limits'])
    for (const r of ['cpu', 'memory']) assert.ok(c.resources[kind]?.[r], `resources.${kind}.${r}`);
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
  assert.equal(env.ATTND_THREADS, undefined,
    'no fixed worker count: attnd reads the CPU limit from its cgroup (server/host/cpus.h)');
});

/** A Kubernetes CPU quantity ("2", "1500m", 0.5) in CPUs. */
const cpus = (q) => (String(q).endsWith('m') ? Number(String(q).slice(0, -1)) / 1000 : Number(q));

test('CPU: request = limit, and the HPA scales on a share of what a pod can use', () => {
  const c = one('Deployment').spec.template.spec.containers[0];
  const request = cpus(c.resources.requests.cpu), limit = cpus(c.resources.limits.cpu);
  assert.ok(limit >= 1, `limit ${limit}`);
  // Utilization is measured against the request: with a request far below the limit
  // (250m against 2) a 70 % target is 0.175 CPU, and the HPA scales out idle pods.
  assert.equal(request, limit, 'requests.cpu equals limits.cpu');
  const target = one('HorizontalPodAutoscaler').spec.metrics
    .find((m) => m.type === 'Resource' && m.resource.name === 'cpu').resource.target.averageUtilization;
  const cores = (target / 100) * request;
  assert.ok(target >= 50 && target <= 90, `target ${target} %`);
  assert.ok(cores >= 0.5 * limit && cores < limit, `scales at ${cores} of ${limit} CPUs`);
});

test('probes and Prometheus use the admin port, which the Service does not expose', () => {
  const d = one('Deployment');
  const c = d.spec.template.spec.containers[0];
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
  const admin = c.ports.find((p) => p.name === 'admin');
  assert.ok(admin, 'a container port named admin');
  assert.equal(String(admin.containerPort), env.ATTND_ADMIN_PORT, 'ATTND_ADMIN_PORT is that port');
  assert.notEqual(admin.containerPort, c.ports.find((p) => p.name === 'http').containerPort);
  for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe])
    assert.ok(probe.httpGet.port === 'admin' || probe.httpGet.port === admin.containerPort,
      `${probe.httpGet.path} is probed on the admin port`);
  const ann = d.spec.template.metadata.annotations;
  assert.equal(ann['prometheus.io/scrape'], 'true');
  assert.equal(ann['prometheus.io/port'], String(admin.containerPort));
  assert.equal(ann['prometheus.io/path'], '/metrics');
  const svc = one('Service');
  for (const p of svc.spec.ports)
    assert.ok(p.targetPort !== 'admin' && p.targetPort !== admin.containerPort,
      'the Service sends clients to the data port only');
});

test('the per-client connection limit is set on purpose', () => {
  const c = one('Deployment').spec.template.spec.containers[0];
  const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]));
  const slots = Number(env.ATTND_MAX_CONNECTIONS);
  const perClient = Number(env.ATTND_MAX_CLIENT_CONNECTIONS);
  assert.ok(slots >= 1, 'ATTND_MAX_CONNECTIONS is set');
  assert.ok(perClient === 0 || perClient < slots,
    'ATTND_MAX_CLIENT_CONNECTIONS is 0 (behind a balancer) or leaves room for other clients');
});

test('the pod is locked down: non-root, read-only root filesystem, no privilege escalation', () => {
  const pod = one('Deployment').spec.template.spec;
  const c = pod.containers[0];
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.ok(pod.securityContext.runAsUser > 0);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
  assert.notEqual(c.securityContext.privileged, true);
  assert.equal(pod.automountServiceAccountToken, false);
});

test('terminationGracePeriodSeconds covers preStop plus attnd\'s longest drain', () => {
  const pod = one('Deployment').spec.template.spec;
  const main = fs.readFileSync(path.join(ROOT, 'server/main.c'), 'utf8');
  const drain = Number(main.match(/#define SRV_GRACE_MAX (\d+)/)[1]);
  const cmd = pod.containers[0].lifecycle?.preStop?.exec?.command ?? [];
  const preStop = cmd[0] === 'sleep' ? Number(cmd[1]) : 0;
  assert.ok(pod.terminationGracePeriodSeconds >= preStop + drain + 5,
    `${pod.terminationGracePeriodSeconds} s >= preStop ${preStop} s + drain ${drain} s + 5 s`);
});

test('the Service, HPA and PodDisruptionBudget point at the Deployment\'s pods', () => {
  const d = one('Deployment');
  const labels = d.spec.template.metadata.labels;
  const matches = (selector) =>
    Object.entries(selector).every(([k, v]) => labels[k] === v);

  const svc = one('Service');
  assert.ok(matches(svc.spec.selector), 'Service selector');
  const port = svc.spec.ports[0];
  assert.ok(d.spec.template.spec.containers[0].ports.some((p) => p.name === port.targetPort ||
    p.containerPort === port.targetPort), 'Service targetPort is a container port');

  const hpa = one('HorizontalPodAutoscaler');
  assert.deepEqual(
    { kind: hpa.spec.scaleTargetRef.kind, name: hpa.spec.scaleTargetRef.name },
    { kind: 'Deployment', name: d.metadata.name });
  assert.ok(hpa.spec.minReplicas >= 2 && hpa.spec.maxReplicas > hpa.spec.minReplicas);
  const cpu = hpa.spec.metrics.find((m) => m.type === 'Resource' && m.resource.name === 'cpu');
  assert.equal(cpu.resource.target.type, 'Utilization');
  assert.ok(d.spec.template.spec.containers[0].resources.requests.cpu,
    'utilization is relative to the CPU request, which must be set');

  const pdb = one('PodDisruptionBudget');
  assert.ok(matches(pdb.spec.selector.matchLabels), 'PodDisruptionBudget selector');
  assert.ok(pdb.spec.minAvailable < hpa.spec.minReplicas, 'a drain can still evict a pod');
  assert.ok(matches(d.spec.selector.matchLabels), 'the Deployment selects its own pods');
});
