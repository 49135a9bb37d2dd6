import { type RefObject, useEffect, useState } from 'react';

/**
 * The rendered width of an element in CSS pixels, kept current as it resizes. Charts use it to draw at one unit per
 * pixel, so their text stays readable from a phone to a desktop instead of scaling with the picture.
 */
export function useElementWidth(ref: RefObject<Element | null>, fallback: number): number {
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      const w = el.getBoundingClientRect().width;
      if (w > 0) setWidth(Math.round(w));
    };
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [ref]);
  return width;
}
