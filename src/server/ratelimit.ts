import { ApiError } from './errors.js';

/** Per-key token bucket. `ratePerSecond` 0 turns limiting off. */
export class RateLimiter {
  private buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private ratePerSecond: number,
    private burst: number,
  ) {}

  take(key: string): void {
    if (this.ratePerSecond <= 0) return;
    const now = Date.now();
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.ratePerSecond);
    bucket.at = now;
    if (bucket.tokens < 1) {
      const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / this.ratePerSecond));
      this.buckets.set(key, bucket);
      throw new ApiError(429, 'rate_limited', `Too many requests for this API key; retry in ${retryAfter}s`, {
        'Retry-After': String(retryAfter),
      });
    }
    bucket.tokens -= 1;
    this.buckets.set(key, bucket);
  }
}
