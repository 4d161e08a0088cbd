/**
 * Keeping a platform's secrets out of what an adapter logs and throws.
 *
 * Contract: `secretScrubber(secrets, { mark, detail })` gives `scrub(text)`, which replaces every
 * occurrence of each non-empty secret with `mark` (default `<secret>`), and `describeError(err)`, an error
 * as one scrubbed line: `detail(err)` (the platform's own reading of its errors), by default the code
 * an API put in its error body (`data.error`, and the missing scope in `data.needed`), else the
 * error's message. Nothing `describeError` returns holds a secret, whatever the error carries (a URL with
 * the token in it, an echoed header).
 */

export interface SecretScrubber {
  scrub: (s: string) => string;
  describeError: (err: unknown) => string;
}

/** `data.error` (+ `needed`) when an API error carries its body, else the message. */
function apiErrorDetail(err: unknown): string {
  const e = err as { data?: { error?: string; needed?: string }; message?: string };
  return e.data?.error ? `${e.data.error}${e.data.needed ? ` (needs ${e.data.needed})` : ''}` : (e.message ?? String(err));
}

export function secretScrubber(secrets: ReadonlyArray<string | undefined>, opts: { mark?: string; detail?: (err: unknown) => string } = {}): SecretScrubber {
  const list = secrets.filter((s): s is string => !!s);
  const mark = opts.mark ?? '<secret>';
  const detail = opts.detail ?? apiErrorDetail;
  const scrub = (s: string): string => list.reduce((acc, t) => acc.split(t).join(mark), s);
  return { scrub, describeError: (err) => scrub(detail(err)) };
}
