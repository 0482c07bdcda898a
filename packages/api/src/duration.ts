// How long ago, in the few characters kubectl's AGE column has: Kubernetes'
// duration.HumanDuration (k8s.io/apimachinery/pkg/util/duration), which the
// apiserver's Table rows and the CLI's printers both show, so they must agree.

/**
 * About two or three significant figures of a duration: 45s, 3m20s, 30m, 5h1m,
 * 20h, 3d4h, 12d, 2y3d, 9y. Up to two seconds in the future counts as now ("0s",
 * clocks of two machines drift); more than that is "<invalid>".
 */
export function humanDuration(ms: number): string {
  // Whole units toward zero, as Go's int() of a duration does: -1.5 s is -1 s, not -2 s.
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 2 * 60) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) return withRest(minutes, 'm', seconds % 60, 's');
  if (minutes < 3 * 60) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) return withRest(hours, 'h', minutes % 60, 'm');
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 8 * 24) return withRest(days, 'd', hours % 24, 'h');
  if (days < 2 * 365) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (years < 8) return withRest(years, 'y', days % 365, 'd');
  return `${years}y`;
}

/** "3m20s", or "3m" when the smaller unit is zero. */
function withRest(whole: number, unit: string, rest: number, restUnit: string): string {
  return rest === 0 ? `${whole}${unit}` : `${whole}${unit}${rest}${restUnit}`;
}
