/**
 * `kube-balancer/testing`: simulated kube-apiservers for your own tests — several servers, their
 * kubeconfig and `static:` target, and the failures to put them through (crash, restart, drain,
 * slow, black hole), as envtest gives controller-runtime users one apiserver. Needs the optional
 * packages `ws` and `jsrsasign` (`npm install --save-dev ws jsrsasign`). See docs/testing.md.
 *
 * @packageDocumentation
 */
export { startApiservers } from './startApiservers.ts';
export { generatePki } from './pki.ts';
export type { Apiservers, SimulatedApiserver, SimulatorOptions, StartApiserversOptions } from './types.ts';
export type {
  AnonymousAccess,
  ApiserverCluster,
  ApiserverInstance,
  ExecPlugin,
  InstanceCounters,
  InstanceModes,
  InstanceState,
  KubeconfigOptions,
  RecordedApiRequest,
  ShutdownOptions,
} from '../../fixtures/apiserver/index.ts';
export type { GeneratePkiOptions, KeyPair, Pki } from '../../fixtures/certs/index.ts';
