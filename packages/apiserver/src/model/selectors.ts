// Label and field selectors from ?labelSelector= and ?fieldSelector=, parsed by
// @kubit/api; a parse error becomes a 400 naming the problem.
import {
  badRequest,
  type FieldSelector,
  FieldSelectorParseError,
  type LabelSelector,
  LabelSelectorParseError,
  labelSelectorAsSelector,
  parseFieldSelector as parseFields,
  parseLabelSelector as parseLabels,
  type Selector,
} from '@kubit/api';
import type { KObject } from '../storage.js';

export type { FieldSelector, Selector };

export function parseLabelSelector(text: string): Selector {
  try {
    return parseLabels(text);
  } catch (err) {
    if (err instanceof LabelSelectorParseError)
      throw badRequest(`unable to parse requirement: ${err.message}`);
    throw err;
  }
}

export function parseFieldSelector(text: string): FieldSelector {
  try {
    return parseFields(text);
  } catch (err) {
    if (err instanceof FieldSelectorParseError) throw badRequest(err.message);
    throw err;
  }
}

/**
 * spec.selector as the label-selector string Kubernetes prints ("app=web,tier in (a,b)").
 * `map` is a core/v1 selector (a ReplicationController's): a plain label map, printed
 * as labels.SelectorFromSet does (sorted "k=v,...").
 */
export function selectorText(o: KObject, map = false): string {
  const spec = o.spec;
  const sel = spec && typeof spec === 'object' ? (spec as Record<string, unknown>).selector : undefined;
  if (!sel || typeof sel !== 'object') return '';
  try {
    const ls = (map ? { matchLabels: sel } : sel) as LabelSelector;
    return labelSelectorAsSelector(ls).toString();
  } catch {
    // Stored objects were validated; an unparsable selector prints as nothing rather than failing a list.
    return '';
  }
}
