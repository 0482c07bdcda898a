// Label and field selectors from ?labelSelector= and ?fieldSelector=, parsed by
// @kubit/api; a parse error becomes a 400 naming the problem.
import {
  badRequest,
  type FieldSelector,
  FieldSelectorParseError,
  LabelSelectorParseError,
  parseFieldSelector as parseFields,
  parseLabelSelector as parseLabels,
  type Selector,
} from '@kubit/api';

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
