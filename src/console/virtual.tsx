// A virtualised list: only the rows in (and near) the viewport are in the page, so a conversation
// of 10,000 items opens and scrolls as fast as one of 20. Rows may be of any height: each rendered
// row is measured (ResizeObserver) and rows not yet seen count as `estimate` pixels. Following: while
// the view is at the bottom, new rows keep it there (a live conversation or log).
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useReducer, useRef, useState } from 'preact/hooks';

const OVERSCAN_PX = 600;
/** Within this of the end, the view is at the end (and follows it). */
const AT_END_PX = 4;
const fromEnd = (el: HTMLElement) => el.scrollHeight - el.clientHeight - el.scrollTop;

export function VirtualList<T>(props: {
  items: readonly T[];
  keyOf: (item: T) => string;
  render: (item: T) => ComponentChildren;
  estimate?: number;
  class?: string;
  listClass?: string;
  empty?: ComponentChildren;
  /** Attributes of the scrolling box (role, labels). */
  box?: Record<string, string>;
  /** Told when the view comes near the first row (to load earlier rows; prepended rows keep the view where it was). */
  onNearTop?: () => void;
}) {
  const estimate = props.estimate ?? 64;
  const box = useRef<HTMLDivElement>(null);
  const list = useRef<HTMLOListElement>(null);
  const heights = useRef(new Map<string, number>());
  const observer = useRef<ResizeObserver | undefined>(undefined);
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const [view, setView] = useState({ top: 0, height: 800 });
  const atBottom = useRef(true);
  const lastTop = useRef(0);
  const frame = useRef(0);
  const firstKey = useRef<string | undefined>(undefined);

  if (!observer.current && typeof ResizeObserver !== 'undefined')
    observer.current = new ResizeObserver((entries) => {
      let changed = false;
      for (const entry of entries) {
        const el = entry.target as HTMLElement;
        const key = el.dataset.vkey;
        if (!key) continue;
        const h = el.offsetHeight;
        if (h > 0 && heights.current.get(key) !== h) {
          heights.current.set(key, h);
          changed = true;
        }
      }
      if (changed) redraw(0);
    });

  // Where each row starts (the sum of the heights before it).
  const n = props.items.length;
  const starts = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) starts[i + 1] = starts[i]! + (heights.current.get(props.keyOf(props.items[i]!)) ?? estimate);
  const total = starts[n]!;
  const find = (y: number) => {
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid + 1]! <= y) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  // Estimates may make the list shorter than where the view was: never a window past the end.
  const top = Math.max(0, Math.min(view.top, total - view.height));
  // Rows put before the first one: the view moves down by their height, so it shows what it showed.
  let shift = 0;
  const headKey = n > 0 ? props.keyOf(props.items[0]!) : undefined;
  if (firstKey.current !== undefined && headKey !== firstKey.current) {
    const at = props.items.findIndex((item) => props.keyOf(item) === firstKey.current);
    if (at > 0) shift = starts[at]!;
  }
  const first = Math.max(0, find(top + shift - OVERSCAN_PX));
  const last = Math.min(n, find(top + shift + view.height + OVERSCAN_PX) + 1);

  // After each render: keep following the end when the view was there.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    firstKey.current = headKey;
    if (shift > 0) {
      el.scrollTop += shift;
      lastTop.current = el.scrollTop;
      setView({ top: el.scrollTop, height: el.clientHeight });
      return;
    }
    // Rows just rendered are measured now, before the view moves (the observer would tell only
    // after, by when a move could have taken them out of the window again).
    let measured = false;
    for (const row of Array.from(list.current?.children ?? []) as HTMLElement[]) {
      const key = row.dataset.vkey;
      const h = row.offsetHeight;
      if (key && h > 0 && heights.current.get(key) !== h) {
        heights.current.set(key, h);
        measured = true;
      }
    }
    if (measured) return redraw(0);
    // The reader scrolled up and its scroll event (handled a frame later) is not in yet: a render
    // now (a stream record, a row measured) must not pull the view back to the end.
    if (atBottom.current && fromEnd(el) > AT_END_PX && el.scrollTop < lastTop.current - 1) atBottom.current = false;
    if (atBottom.current && fromEnd(el) > 2) {
      el.scrollTop = el.scrollHeight;
      lastTop.current = el.scrollTop;
    }
    if (Math.abs(el.clientHeight - view.height) > 1 || (atBottom.current && Math.abs(el.scrollTop - view.top) > 1))
      setView({ top: el.scrollTop, height: el.clientHeight });
  });

  const onScroll = () => {
    const el = box.current;
    if (!el || frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      // Following stops when the reader scrolls up, and starts again at the bottom; content growing
      // below (a streamed answer, a row measured taller) does not stop it.
      const atEnd = fromEnd(el) <= AT_END_PX;
      atBottom.current = atEnd || (atBottom.current && el.scrollTop >= lastTop.current - 1);
      lastTop.current = el.scrollTop;
      setView({ top: el.scrollTop, height: el.clientHeight });
      if (el.scrollTop < OVERSCAN_PX * 2) props.onNearTop?.();
    });
  };

  const measure = (el: HTMLElement | null) => {
    if (el && observer.current) observer.current.observe(el);
  };

  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region (a log, by the caller's role) must take focus to scroll by keyboard
    <div class={`vbox ${props.class ?? ''}`} ref={box} onScroll={onScroll} tabIndex={0} data-rows={n} data-rendered={last - first} {...props.box}>
      {/* Spacers set through the CSSOM (not style attributes), which the strict CSP allows. */}
      <ol ref={list} class={props.listClass} style={{ paddingTop: `${starts[first]}px`, paddingBottom: `${total - starts[last]!}px` }}>
        {props.items.slice(first, last).map((item) => {
          const key = props.keyOf(item);
          return (
            <li key={key} data-vkey={key} ref={measure}>
              {props.render(item)}
            </li>
          );
        })}
        {n === 0 && props.empty !== undefined && <li class="empty">{props.empty}</li>}
      </ol>
      {!atBottom.current && n > 0 && (
        <button
          type="button"
          class="to-end"
          onClick={() => {
            atBottom.current = true;
            const el = box.current;
            if (el) {
              el.scrollTop = el.scrollHeight;
              lastTop.current = el.scrollTop;
            }
            redraw(0);
          }}
        >
          ↓ Latest
        </button>
      )}
    </div>
  );
}
