/** gRPC calls an etcd member has started since it began, by method (`Txn`, `LeaseGrant`, …). */
async function rpcsStarted(endpoint: string): Promise<Record<string, number>> {
  const response = await fetch(`http://${endpoint}/metrics`, {
    signal: AbortSignal.timeout(2000),
  });
  const out: Record<string, number> = {};
  for (const [, labels, value] of (await response.text()).matchAll(
    /^grpc_server_started_total\{([^}]*)\} (\S+)$/gm,
  )) {
    const method = /grpc_method="([^"]+)"/.exec(labels!)![1]!;
    out[method] = (out[method] ?? 0) + Number(value);
  }
  return out;
}

/**
 * The gRPC calls `work` made the member at `endpoint()` start, by method, leaving out methods it
 * did not call (read from the member's /metrics before and after).
 */
export function rpcCounter(
  endpoint: () => string,
): (work: () => Promise<unknown>) => Promise<Record<string, number>> {
  return async (work) => {
    const before = await rpcsStarted(endpoint());
    await work();
    const after = await rpcsStarted(endpoint());
    return Object.fromEntries(
      Object.entries(after)
        .map(([method, n]) => [method, n - (before[method] ?? 0)] as const)
        .filter(([, n]) => n !== 0),
    );
  };
}
