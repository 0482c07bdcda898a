// A pod's name resolution, as Kubernetes' kubelet sets it up: the resolv.conf
// the runtime writes from the sandbox's DNS config (from dnsPolicy and
// dnsConfig), and the /etc/hosts file the kubelet writes itself and mounts into
// each container. Pure: the caller reads the node's resolv.conf and writes files.
import type { Pod } from 'kubernetes-types/core/v1.js';

/** Kubernetes' limits (pkg/apis/core/validation): more is cut, with a warning. */
export const MAX_NAMESERVERS = 3;
export const MAX_SEARCH_PATHS = 32;
export const MAX_SEARCH_CHARS = 2048;

export interface ResolvConf {
  servers: string[];
  searches: string[];
  options: string[];
}

/** What the kubelet knows of DNS: --cluster-dns, --cluster-domain and the node's --resolv-conf. */
export interface NodeDnsSettings {
  clusterDNS: string[];
  clusterDomain: string;
  host: ResolvConf;
}

/** Reads nameserver, search/domain and options lines, as the C resolver does (the last search wins). */
export function parseResolvConf(text: string): ResolvConf {
  const out: ResolvConf = { servers: [], searches: [], options: [] };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [key, ...fields] = line.split(/\s+/);
    if (key === 'nameserver' && fields[0]) out.servers.push(fields[0]);
    else if (key === 'search' || key === 'domain') out.searches = fields.filter(Boolean);
    else if (key === 'options') out.options.push(...fields.filter(Boolean));
  }
  return out;
}

const unique = (xs: string[]): string[] => [...new Set(xs)];

/** Options merge by name ("ndots:2" replaces "ndots:5"), in first-seen order. */
function mergeOptions(base: string[], extra: string[]): string[] {
  const byName = new Map<string, string>();
  for (const o of [...base, ...extra]) byName.set(o.split(':')[0], o);
  return [...byName.values()];
}

export interface PodDns {
  config: ResolvConf;
  /** Why the config is not what the pod asked for, for a Warning event (DNSConfigForming). */
  warnings: string[];
}

/** The effective policy: ClusterFirst on the host network means Default, as Kubernetes has it. */
export function effectiveDnsPolicy(pod: Pod): string {
  const policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  if (policy === 'ClusterFirst' && pod.spec?.hostNetwork) return 'Default';
  if (policy === 'ClusterFirstWithHostNet') return 'ClusterFirst';
  return policy;
}

/** The resolv.conf of a pod from its dnsPolicy and dnsConfig. */
export function podDnsConfig(pod: Pod, node: NodeDnsSettings): PodDns {
  const warnings: string[] = [];
  let policy = effectiveDnsPolicy(pod);
  if (policy === 'ClusterFirst' && node.clusterDNS.length === 0) {
    warnings.push(
      'pod has dnsPolicy ClusterFirst but the kubelet has no --cluster-dns; falling back to the node\'s resolv.conf ("Default")',
    );
    policy = 'Default';
  }
  const ns = pod.metadata?.namespace ?? 'default';
  const domain = node.clusterDomain;
  let config: ResolvConf;
  switch (policy) {
    case 'ClusterFirst':
      config = {
        servers: [...node.clusterDNS],
        searches: unique([`${ns}.svc.${domain}`, `svc.${domain}`, domain, ...node.host.searches]),
        options: ['ndots:5'],
      };
      break;
    case 'None':
      config = { servers: [], searches: [], options: [] };
      break;
    default:
      config = structuredClone(node.host);
  }
  const extra = pod.spec?.dnsConfig;
  if (extra) {
    config.servers = unique([...config.servers, ...(extra.nameservers ?? [])]);
    config.searches = unique([...config.searches, ...(extra.searches ?? [])]);
    config.options = mergeOptions(
      config.options,
      (extra.options ?? []).map((o) => (o.value !== undefined ? `${o.name}:${o.value}` : (o.name ?? ''))),
    );
  }
  return { config: withinLimits(config, warnings), warnings };
}

function withinLimits(c: ResolvConf, warnings: string[]): ResolvConf {
  if (c.servers.length > MAX_NAMESERVERS) {
    warnings.push(
      `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${c.servers.slice(0, MAX_NAMESERVERS).join(' ')}`,
    );
    c.servers = c.servers.slice(0, MAX_NAMESERVERS);
  }
  let searches = c.searches.slice(0, MAX_SEARCH_PATHS);
  while (searches.join(' ').length > MAX_SEARCH_CHARS) searches = searches.slice(0, -1);
  if (searches.length < c.searches.length) {
    warnings.push(
      `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(' ')}`,
    );
    c.searches = searches;
  }
  return c;
}

/**
 * The /etc/hosts a pod's containers see: localhost, the pod's own name (its
 * FQDN first when it has a subdomain) and its hostAliases, as Kubernetes writes it.
 */
export function podHostsFile(pod: Pod, podIP: string, clusterDomain: string): string {
  const lines = [
    '# Kubernetes-managed hosts file.',
    '127.0.0.1\tlocalhost',
    '::1\tlocalhost ip6-localhost ip6-loopback',
    'fe00::0\tip6-localnet',
    'fe00::0\tip6-mcastprefix',
    'fe00::1\tip6-allnodes',
    'fe00::2\tip6-allrouters',
  ];
  const hostname = (pod.spec?.hostname ?? pod.metadata?.name ?? '').slice(0, 63);
  const subdomain = pod.spec?.subdomain;
  const ns = pod.metadata?.namespace ?? 'default';
  if (podIP) {
    lines.push(
      subdomain
        ? `${podIP}\t${hostname}.${subdomain}.${ns}.svc.${clusterDomain}\t${hostname}`
        : `${podIP}\t${hostname}`,
    );
  }
  const aliases = pod.spec?.hostAliases ?? [];
  if (aliases.length) {
    lines.push('', '# Entries added by HostAliases.');
    for (const a of aliases)
      if (a.ip && a.hostnames?.length) lines.push(`${a.ip}\t${a.hostnames.join('\t')}`);
  }
  return `${lines.join('\n')}\n`;
}
