import { type KeyboardEvent, useId, useLayoutEffect, useRef } from 'react';

/** Scrolls the bar (and nothing else: not the page) just enough to show the whole tab, with a little of its neighbour. */
function scrollTabIntoView(bar: HTMLElement, tab: HTMLElement) {
  const b = bar.getBoundingClientRect();
  const t = tab.getBoundingClientRect();
  // A glimpse of the next tab tells there is more to scroll to.
  const margin = Math.min(32, Math.max(0, (b.width - t.width) / 2));
  if (t.left < b.left + margin) bar.scrollLeft -= b.left + margin - t.left;
  else if (t.right > b.right - margin) bar.scrollLeft += t.right - (b.right - margin);
}

/**
 * WAI-ARIA tabs: arrow keys (and Home, End) move between tabs, only the selected tab is in the tab order. On a narrow
 * screen the bar scrolls sideways and keeps the selected tab in view, whether it was chosen by a tap, by a key or by
 * the address (`/settings#billing`).
 */
export function Tabs<T extends string>({
  tabs,
  selected,
  onSelect,
  label,
}: {
  tabs: readonly { id: T; label: string }[];
  selected: T;
  onSelect: (id: T) => void;
  label: string;
}) {
  const id = useId();
  const bar = useRef<HTMLDivElement>(null);
  const refs = useRef<(HTMLButtonElement | null)[]>([]);
  const selectedIndex = tabs.findIndex((tab) => tab.id === selected);

  useLayoutEffect(() => {
    const tab = refs.current[selectedIndex];
    if (bar.current && tab) scrollTabIntoView(bar.current, tab);
  }, [selectedIndex]);

  const onKeyDown = (event: KeyboardEvent, index: number) => {
    const last = tabs.length - 1;
    const next =
      event.key === 'ArrowRight'
        ? (index + 1) % tabs.length
        : event.key === 'ArrowLeft'
          ? (index - 1 + tabs.length) % tabs.length
          : event.key === 'Home'
            ? 0
            : event.key === 'End'
              ? last
              : -1;
    if (next < 0) return;
    event.preventDefault();
    onSelect(tabs[next]!.id);
    // preventScroll: the bar scrolls itself (above); the browser's own focus scrolling would move the page too.
    refs.current[next]?.focus({ preventScroll: true });
  };
  return (
    <div className="tabs" role="tablist" aria-label={label} ref={bar}>
      {tabs.map((tab, index) => (
        <button
          key={tab.id}
          ref={(el) => {
            refs.current[index] = el;
          }}
          type="button"
          role="tab"
          id={`${id}-${tab.id}`}
          aria-selected={tab.id === selected}
          tabIndex={tab.id === selected ? 0 : -1}
          className={tab.id === selected ? 'tab selected' : 'tab'}
          onClick={() => onSelect(tab.id)}
          onKeyDown={(e) => onKeyDown(e, index)}
        >
          {tab.label}
        </button>
      ))}
    </div>
  );
}
