/** `address:port`, with IPv6 in brackets: the identity of an endpoint across updates. */
export function endpointKey(endpoint: { readonly address: string; readonly port: number }): string {
  return endpoint.address.includes(':') ? `[${endpoint.address}]:${endpoint.port}` : `${endpoint.address}:${endpoint.port}`;
}
