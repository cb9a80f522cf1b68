// tests/k8s/kserve.test.mjs — docker/kserve as KServe would take it: rendered by
// `kubectl kustomize`, each object checked against a schema of the KServe fields it
// uses (serving.kserve.io v1alpha1 ServingRuntime, v1beta1 InferenceService, written
// from KServe's API reference: unknown fields are refused, so a misspelt one fails here
// rather than being dropped by the API server), its containers against the Kubernetes
// Container schema (kubernetes-models), then what docs/deployment.md promises: the V2
// protocol, V2's health endpoints as probes, the CPU request equal to the limit.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import Ajv from 'ajv/dist/2020.js';
import yaml from 'js-yaml';
import { Pod } from 'kubernetes-models/v1';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const metadata = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 },
    namespace: { type: 'string' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    annotations: { type: 'object', additionalProperties: { type: 'string' } },
  },
  additionalProperties: false,
};
const protocol = { enum: ['v1', 'v2', 'grpc-v1', 'grpc-v2'] };
const containers = { type: 'array', minItems: 1, items: { type: 'object' } }; // Pod checks them

const SCHEMAS = {
  'serving.kserve.io/v1alpha1/ServingRuntime': {
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', 'spec'],
    properties: {
      apiVersion: { const: 'serving.kserve.io/v1alpha1' },
      kind: { const: 'ServingRuntime' },
      metadata,
      spec: {
        type: 'object',
        required: ['containers', 'supportedModelFormats'],
        properties: {
          supportedModelFormats: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['name'],
              properties: {
                name: { type: 'string' },
                version: { type: 'string' },
                autoSelect: { type: 'boolean' },
                priority: { type: 'integer', minimum: 1 },
              },
              additionalProperties: false,
            },
          },
          protocolVersions: { type: 'array', items: protocol },
          multiModel: { type: 'boolean' },
          disabled: { type: 'boolean' },
          containers,
          grpcEndpoint: { type: 'string' },
          grpcDataEndpoint: { type: 'string' },
          httpDataEndpoint: { type: 'string' },
          replicas: { type: 'integer', minimum: 0 },
          nodeSelector: { type: 'object' },
          tolerations: { type: 'array' },
          affinity: { type: 'object' },
          volumes: { type: 'array' },
          imagePullSecrets: { type: 'array' },
          labels: { type: 'object' },
          annotations: { type: 'object' },
        },
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  },
  'serving.kserve.io/v1beta1/InferenceService': {
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', 'spec'],
    properties: {
      apiVersion: { const: 'serving.kserve.io/v1beta1' },
      kind: { const: 'InferenceService' },
      metadata,
      spec: {
        type: 'object',
        required: ['predictor'],
        properties: {
          predictor: {
            type: 'object',
            properties: {
              model: {
                type: 'object',
                required: ['modelFormat'],
                properties: {
                  modelFormat: {
                    type: 'object',
                    required: ['name'],
                    properties: { name: { type: 'string' }, version: { type: 'string' } },
                    additionalProperties: false,
                  },
                  runtime: { type: 'string' },
                  runtimeVersion: { type: 'string' },
                  protocolVersion: protocol,
                  storageUri: { type: 'string' },
                  env: { type: 'array' },
                  args: { type: 'array' },
                  resources: { type: 'object' },
                },
                additionalProperties: false,
              },
              containers,
              minReplicas: { type: 'integer', minimum: 0 },
              maxReplicas: { type: 'integer', minimum: 0 },
              scaleMetric: { enum: ['cpu', 'memory', 'concurrency', 'rps'] },
              scaleTarget: { type: 'integer', minimum: 1 },
              containerConcurrency: { type: 'integer', minimum: 0 },
              timeout: { type: 'integer', minimum: 0 },
              canaryTrafficPercent: { type: 'integer', minimum: 0, maximum: 100 },
              serviceAccountName: { type: 'string' },
              labels: { type: 'object' },
              annotations: { type: 'object' },
            },
            additionalProperties: false,
          },
          transformer: { type: 'object' },
          explainer: { type: 'object' },
        },
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  },
};

let objects;
const one = (kind) => {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0];
};
const cpus = (q) => (String(q).endsWith('m') ? Number(String(q).slice(0, -1)) / 1000 : Number(q));

before(() => {
  const r = spawnSync('kubectl', ['kustomize', path.join(ROOT, 'docker/kserve')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  objects = yaml.loadAll(r.stdout).filter(Boolean);
});

test('kustomize renders a ServingRuntime and an InferenceService, each valid against its schema', () => {
  assert.deepEqual(objects.map((o) => o.kind).sort(), ['InferenceService', 'ServingRuntime']);
  const ajv = new Ajv({ allErrors: true, strict: false });
  for (const o of objects) {
    const schema = SCHEMAS[`${o.apiVersion}/${o.kind}`];
    assert.ok(schema, `a schema for ${o.apiVersion} ${o.kind}`);
    const validate = ajv.compile(schema);
    assert.ok(validate(o), `${o.kind}: ${ajv.errorsText(validate.errors)}`);
  }
  const rt = one('ServingRuntime');
  assert.doesNotThrow(() => new Pod({ metadata: { name: 'x' }, spec: { containers: rt.spec.containers } }).validate(),
    'the runtime\'s containers are Kubernetes containers');
});

test('the schemas refuse what they should (a misspelt field, a protocol that does not exist)', () => {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const isvc = structuredClone(one('InferenceService'));
  const validate = ajv.compile(SCHEMAS['serving.kserve.io/v1beta1/InferenceService']);
  isvc.spec.predictor.model.protocolVerison = 'v2';
  assert.equal(validate(isvc), false);
  delete isvc.spec.predictor.model.protocolVerison;
  isvc.spec.predictor.model.protocolVersion = 'v3';
  assert.equal(validate(isvc), false);
});

test('the InferenceService is a V2 predictor on the attnd runtime, whose format and protocol it names', () => {
  const isvc = one('InferenceService'), rt = one('ServingRuntime');
  const m = isvc.spec.predictor.model;
  assert.equal(m.protocolVersion, 'v2');
  assert.equal(m.runtime, rt.metadata.name);
  assert.ok(rt.spec.protocolVersions.includes('v2'));
  assert.ok(rt.spec.supportedModelFormats.some((f) => f.name === m.modelFormat.name && f.version === m.modelFormat.version));
  assert.ok(isvc.spec.predictor.minReplicas >= 2 && isvc.spec.predictor.maxReplicas > isvc.spec.predictor.minReplicas);
});

test('the runtime\'s container: attnd on 8080, V2 health probes, CPU request = limit, locked down', () => {
  const c = one('ServingRuntime').spec.containers[0];
  assert.equal(c.name, 'kserve-container');
  assert.match(c.image, /^attnd:/);
  assert.deepEqual(c.ports.map((p) => [p.name, p.containerPort]), [['http1', 8080]]);
  assert.deepEqual([c.readinessProbe.httpGet.path, c.readinessProbe.httpGet.port], ['/v2/health/ready', 8080]);
  assert.deepEqual([c.livenessProbe.httpGet.path, c.livenessProbe.httpGet.port], ['/v2/health/live', 8080]);
  assert.equal(cpus(c.resources.requests.cpu), cpus(c.resources.limits.cpu));
  const env = Object.fromEntries(c.env.map((e) => [e.name, e.value]));
  assert.equal(env.ATTND_THREADS, undefined, 'the workers follow the CPU quota');
  assert.equal(env.ATTND_MAX_CLIENT_CONNECTIONS, '0', 'behind KServe every client has the proxy\'s address');
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
});
