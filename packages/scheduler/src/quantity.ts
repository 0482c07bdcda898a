// Resource quantities in the scheduler's units: milli-units (cpu) and whole units
// (bytes, pods), rounded up as Kubernetes' MilliValue and Value are. The parsing is
// @kubit/api's: exact (no float drift) and cached, so the hot path rarely parses.
export { toMilli as parseMilli, toNumber as parseValue } from '@kubit/api';
