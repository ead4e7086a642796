/**
 * Timestamps in UTC without V8's Date string methods. Date.prototype.toISOString, toUTCString and
 * toJSON print UTC, but V8 (Node 24) works out the local time zone and its name through ICU on
 * their first call in a process anyway: ICU's time zone data, locale data and code paged in, about
 * 0.9 MiB resident in every daemon for as long as it runs (a bare Node process: 42.3 MiB, 43.2 after
 * one toISOString; the getUTC* accessors used here: 42.4). The daemons write timestamps in every
 * log line, Event, ConfigurationState and HTTP answer (issue #14; README, Performance).
 */
import type { ServerResponse } from 'node:http';

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const two = (n: number): string => (n < 10 ? `0${n}` : String(n));

/**
 * `ms` (milliseconds since the epoch) as RFC 3339 in UTC, what Date.prototype.toISOString prints:
 * `2026-12-02T14:19:39.123Z`, or with `fraction` false whole seconds (`2026-12-02T14:19:39Z`, the
 * milliseconds cut, not rounded: Go's time.RFC3339 and metav1.Time). Years outside 0–9999 (which
 * toISOString writes with a sign and six digits) are left to toISOString.
 * @throws RangeError for a time that is not a valid Date (as toISOString does)
 */
export function rfc3339Utc(ms: number, fraction = true): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) {
    const iso = d.toISOString();
    return fraction ? iso : iso.replace(/\.\d{3}Z$/, 'Z');
  }
  const date = `${String(year).padStart(4, '0')}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return fraction ? `${date}T${time}.${String(d.getUTCMilliseconds()).padStart(3, '0')}Z` : `${date}T${time}Z`;
}

/**
 * `ms` as an HTTP date (RFC 9110 IMF-fixdate, what Date.prototype.toUTCString prints and Go's
 * net/http sends): `Wed, 02 Dec 2026 14:19:39 GMT`. Years outside 0–9999 are left to toUTCString.
 * @throws RangeError for a time that is not a valid Date
 */
export function httpDate(ms: number): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (Number.isNaN(year)) throw new RangeError('Invalid time value');
  if (year < 0 || year > 9999) return d.toUTCString();
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()]} ${String(year).padStart(4, '0')} ${time} GMT`;
}

/**
 * Gives `res` the Date header Node's HTTP server would add (and Go's sends), written by httpDate
 * instead of Node's own (which calls toUTCString: see above). Call before the head is written.
 */
export function setDateHeader(res: ServerResponse, now = Date.now()): void {
  res.sendDate = false;
  res.setHeader('Date', httpDate(now));
}
