import type { Scenario } from './sim/Fleet.ts';

/** Steady state before a scenario disturbs anything. */
const WARMUP_MS = 60_000;

export const scenarios: Record<string, Scenario> = {
  'rolling-restart': {
    id: 'rolling-restart',
    title: 'Rolling restart with the default shutdown: each apiserver 30 s after the previous one is ready',
    script(world) {
      world.clock.at(WARMUP_MS, () => {
        world.mark('rolling restart');
        world.cluster.rollingRestart(30_000, () => world.settled());
      });
    },
  },
  'rolling-restart-retry-after': {
    id: 'rolling-restart-retry-after',
    title: 'Rolling restart with --shutdown-send-retry-after',
    configure: (options) => ({ ...options, apiserver: { ...options.apiserver, sendRetryAfter: true } }),
    script(world) {
      world.clock.at(WARMUP_MS, () => {
        world.mark('rolling restart');
        world.cluster.rollingRestart(30_000, () => world.settled());
      });
    },
  },
  'scale-out': {
    id: 'scale-out',
    title: 'Scale-out: two apiservers join (3 → 5)',
    extraServers: 2,
    script(world) {
      world.clock.at(WARMUP_MS, () => {
        world.mark('2 apiservers start');
        let ready = 0;
        for (let i = 0; i < 2; i++) {
          world.cluster.add(false);
        }
        const added = world.cluster.servers.slice(-2);
        for (const server of added) {
          server.onReadiness(() => {
            if (server.ready && ++ready === added.length) world.settled();
          });
        }
      });
    },
  },
  'slow-apiserver': {
    id: 'slow-apiserver',
    title: 'One slow apiserver: every request on the second takes 100× as long for 5 minutes',
    script(world) {
      const server = world.cluster.servers[1]!;
      world.clock.at(WARMUP_MS, () => {
        world.mark('apiserver 2 slow');
        server.slowFactor = 100;
      });
      world.clock.at(WARMUP_MS + 300_000, () => {
        world.mark('apiserver 2 well');
        server.slowFactor = 1;
        world.settled();
      });
    },
  },
  crash: {
    id: 'crash',
    title: 'One crash: the second apiserver dies (connections reset) and its kubelet restarts it',
    script(world) {
      const server = world.cluster.servers[1]!;
      world.clock.at(WARMUP_MS, () => {
        world.mark('apiserver 2 crashes');
        world.cluster.crash(server, () => world.settled());
      });
    },
  },
  'dns-ttl0': {
    id: 'dns-ttl0',
    title: 'SRV records with TTL 0 (dnsmasq\'s default for local records): dns.minTtl decides; one apiserver joins',
    extraServers: 1,
    strategies: ['kube-default'],
    configure: (options) => ({ ...options, dns: { ...options.dns, ttl: 0 } }),
    script(world) {
      world.clock.at(WARMUP_MS, () => {
        world.mark('an apiserver starts');
        const server = world.cluster.add(false);
        server.onReadiness(() => {
          if (server.ready) world.settled();
        });
      });
    },
  },
  discovery: {
    id: 'discovery',
    title: 'Discovery at scale: every client watching the kubernetes EndpointSlice, or asking kubernetes-headless SRV (TTL 5 s), through a rolling restart',
    strategies: ['kube-default', 'kube-endpointslice'],
    script(world) {
      world.clock.at(WARMUP_MS, () => {
        world.mark('rolling restart');
        world.cluster.rollingRestart(30_000, () => world.settled());
      });
    },
  },
  'dns-outage': {
    id: 'dns-outage',
    title: 'DNS outage: the cluster DNS answers nothing for 60 s',
    script(world) {
      world.clock.at(WARMUP_MS, () => {
        world.mark('DNS down');
        world.dns.down = true;
      });
      world.clock.at(WARMUP_MS + 60_000, () => {
        world.mark('DNS back');
        world.dns.down = false;
        world.settled();
      });
    },
  },
};
