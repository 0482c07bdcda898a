// The Events section of describe: events whose involvedObject is the object.

import type { KubeClient, KubeObject } from '@kubit/client';
import { resources } from '@kubit/client';
import { ageOf } from '../printers/humanize.js';
import type { DescribeWriter } from './writer.js';

interface EventShape extends KubeObject {
  involvedObject?: { name?: string; namespace?: string; uid?: string; kind?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
}

export async function eventsFor(client: KubeClient, obj: KubeObject): Promise<EventShape[]> {
  const ns = obj.metadata?.namespace || 'default';
  const list = await client.listAll<EventShape>(resources.events, { namespace: ns });
  const uid = obj.metadata?.uid;
  return list.items
    .filter(
      (e) =>
        e.involvedObject?.name === obj.metadata?.name &&
        (!uid || !e.involvedObject?.uid || e.involvedObject.uid === uid) &&
        (!obj.kind || !e.involvedObject?.kind || e.involvedObject.kind === obj.kind),
    )
    .sort(
      (a, b) =>
        Date.parse(a.lastTimestamp ?? a.eventTime ?? '') - Date.parse(b.lastTimestamp ?? b.eventTime ?? ''),
    );
}

function eventAge(e: EventShape): string {
  const last = ageOf(e.lastTimestamp ?? e.eventTime);
  if ((e.count ?? 1) > 1 && e.firstTimestamp) return `${last} (x${e.count} over ${ageOf(e.firstTimestamp)})`;
  return last;
}

export function writeEvents(w: DescribeWriter, events: EventShape[]): void {
  if (events.length === 0) {
    w.line(0, 'Events:\t<none>');
    return;
  }
  w.line(0, 'Events:');
  w.line(1, 'Type\tReason\tAge\tFrom\tMessage');
  w.line(1, '----\t------\t----\t----\t-------');
  for (const e of events) {
    const from = e.source?.component || e.reportingComponent || '';
    w.line(1, `${e.type ?? ''}\t${e.reason ?? ''}\t${eventAge(e)}\t${from}\t${(e.message ?? '').trim()}`);
  }
}
