import type { GeneratePkiOptions, Pki } from '../../fixtures/certs/index.ts';
import { requirePackages } from './packages.ts';

/**
 * A fresh test CA with an apiserver certificate (the names kubeadm issues, 127.0.0.1–4, `::1` and
 * `options.ips`) and a client certificate (group `system:masters`), EC P-256, valid `days` (default
 * 1). Resolves to PEM text: `await` it before passing it as `startApiservers({ pki })`. Needs `jsrsasign`.
 */
export async function generatePki(options: GeneratePkiOptions = {}): Promise<Pki> {
  await requirePackages(['jsrsasign'], 'kube-balancer/testing generatePki()');
  const pki = await import('../../fixtures/certs/index.ts');
  return pki.generatePki(options);
}
