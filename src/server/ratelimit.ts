import { ApiError } from './errors.js';

/** A token bucket per key (an API key id, a client address). `ratePerSecond` 0 turns limiting off. */
export class RateLimiter {
  private buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private ratePerSecond: number,
    private burst: number,
    private what = 'this API key',
  ) {}

  /** Whether `key` has a token left, without taking one. */
  allows(key: string): boolean {
    if (this.ratePerSecond <= 0) return true;
    const bucket = this.buckets.get(key);
    if (!bucket) return true;
    return Math.min(this.burst, bucket.tokens + ((Date.now() - bucket.at) / 1000) * this.ratePerSecond) >= 1;
  }

  take(key: string): void {
    if (this.ratePerSecond <= 0) return;
    const now = Date.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.ratePerSecond);
    bucket.at = now;
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond));
      this.buckets.set(key, bucket);
      throw new ApiError(429, 'rate_limited', `Too many requests for ${this.what}; retry in ${retryAfter}s`, {
        'Retry-After': String(retryAfter),
      });
    }
    bucket.tokens -= 1;
    // Bounded: many distinct keys (addresses) must not grow this without limit.
    if (!this.buckets.has(key) && this.buckets.size >= 100_000) this.buckets.clear();
    this.buckets.set(key, bucket);
  }
}
