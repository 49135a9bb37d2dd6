import type { CostReport } from '../../api-types.js';
import { useRef } from 'react';
import { formatInteger, formatMoney } from '../../format.js';
import { useElementWidth } from '../../use-element-width.js';

type Day = CostReport['daily'][number];

const HEIGHT = 260;
const PAD = { top: 14, right: 8, bottom: 30, left: 64 };

/** A round axis top at or above `max`: 1, 2, 2.5 or 5 times a power of ten. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

/**
 * Spend per day as SVG bars. Each bar is a list item named with its day, cost and tokens, so a screen reader can walk
 * the days; sighted people get the same text as a tooltip. The caller also offers the figures as a table.
 */
export function DailyChart({ days, label }: { days: readonly Day[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  // Drawn at one unit per pixel of the box: 12px labels stay 12px on a phone.
  const WIDTH = Math.max(280, useElementWidth(box, 720));
  const top = niceCeiling(Math.max(0, ...days.map((d) => d.cost)));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const band = plotW / Math.max(1, days.length);
  const barW = Math.max(2, Math.min(48, band * 0.7));
  // A day label every 64px at most, so a month stays readable on a phone.
  const every = Math.max(1, Math.ceil(days.length / Math.max(2, Math.floor(plotW / 64))));
  const y = (cost: number) => PAD.top + plotH - (cost / top) * plotH;
  // The middle line is labelled only when its figure reads differently from both ends (at 4 decimals a $0.0001 top
  // would show "$0.0001" twice).
  const middle = formatMoney(top / 2);
  const ticks = middle === formatMoney(top) || middle === formatMoney(0) ? [0, top] : [0, top / 2, top];

  return (
    <div ref={box}>
      {/* biome-ignore lint/a11y/useSemanticElements: SVG cannot hold a <ul>; the role lets a screen reader walk the bars */}
      <svg className="cost-chart" width={WIDTH} height={HEIGHT} viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="list" aria-label={label}>
        {/* biome-ignore lint/a11y/noAriaHiddenOnFocusable: an SVG group is not focusable; the axes repeat what each bar says */}
        <g aria-hidden="true">
          {ticks.map((t) => (
            <g key={t}>
              <line className="cost-grid" x1={PAD.left} x2={WIDTH - PAD.right} y1={y(t)} y2={y(t)} />
              <text className="cost-axis" x={PAD.left - 8} y={y(t) + 4} textAnchor="end">
                {formatMoney(t)}
              </text>
            </g>
          ))}
          {days.map((d, i) =>
            i % every === 0 ? (
              <text key={d.date} className="cost-axis" x={PAD.left + band * i + band / 2} y={HEIGHT - 10} textAnchor="middle">
                {d.date}
              </text>
            ) : null,
          )}
        </g>
        {days.map((d, i) => {
          const text = `${d.date}: ${formatMoney(d.cost)}, ${formatInteger(d.tokens)} tokens`;
          const barTop = y(d.cost);
          return (
            // biome-ignore lint/a11y/noInteractiveElementToNoninteractiveRole: an SVG group is not interactive; the role makes the bar a list item
            // biome-ignore lint/a11y/useSemanticElements: SVG cannot hold an <li>
            <g key={d.date} role="listitem" aria-label={text}>
              <title>{text}</title>
              {/* The full-height band is the hover target, so even a zero-cost day shows its tooltip. */}
              <rect className="cost-band" x={PAD.left + band * i} y={PAD.top} width={band} height={plotH} />
              <rect
                className="cost-bar"
                x={PAD.left + band * i + (band - barW) / 2}
                y={barTop}
                width={barW}
                height={Math.max(0, PAD.top + plotH - barTop)}
                rx={Math.min(3, barW / 4)}
              />
            </g>
          );
        })}
      </svg>
    </div>
  );
}
