export { Balancer, createBalancer, type BalancerEvents } from './dispatcher/Balancer.ts';
export { BalancerError, type BalancerErrorCode } from './errors.ts';
export type { BalancerOptions, TlsOptions, UndiciModule, Pem } from './options.ts';
export type { Policy } from './balancer/Picker.ts';
export { defaultOptions } from './options.ts';
export type { EndpointInfo, EndpointState } from './balancer/Endpoint.ts';
export type { EndpointAddress, Resolver, ResolverListener } from './resolver/Resolver.ts';
export type { Target } from './resolver/parseTarget.ts';
export type { Clock, ClockTimer } from './clock.ts';
