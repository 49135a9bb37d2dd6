import type { FleetEdge, FleetGraph as FleetGraphData, FleetNode } from '../../api-types.js';
import { useLayoutEffect, useRef } from 'react';
import { formatPercent } from '../../format.js';
import { useElementWidth } from '../../use-element-width.js';

export const ROLES: readonly FleetNode['role'][] = ['orchestrator', 'specialist', 'worker'];
export const STATUSES: readonly FleetNode['status'][] = ['active', 'idle', 'stale', 'offline'];

/** What each status means, for the legend. */
export const STATUS_MEANING: Record<FleetNode['status'], string> = {
  active: 'running, worked or started recently',
  idle: 'running and quiet for a while, or asleep until a message or job wakes it',
  stale: 'starting, restarting or not ready yet',
  offline: 'stopped or not answering',
};

/** Size of each role's shape: the orchestrator stands out, workers are the smallest. */
const RADIUS: Record<FleetNode['role'], number> = { orchestrator: 30, specialist: 23, worker: 16 };
const RING_GAP = 7;

/** The role's shape centred on 0,0: circle, diamond, rounded square. */
export function RoleShape({ role, r, className }: { role: FleetNode['role']; r: number; className?: string }) {
  if (role === 'orchestrator') return <circle r={r} className={className} />;
  if (role === 'specialist') return <path d={`M 0 ${-r} L ${r} 0 L 0 ${r} L ${-r} 0 Z`} className={className} />;
  return <rect x={-r} y={-r} width={r * 2} height={r * 2} rx={r / 3} className={className} />;
}

/** The load ring: a full grey track and an arc as long as the load, starting at 12 o'clock. */
function LoadRing({ r, load }: { r: number; load: number }) {
  const circumference = 2 * Math.PI * r;
  const share = Math.min(100, Math.max(0, load)) / 100;
  return (
    <g className="mc-ring">
      <circle r={r} className="mc-ring-track" />
      {share > 0 ? (
        <circle r={r} className="mc-ring-load" strokeDasharray={`${share * circumference} ${circumference}`} transform="rotate(-90)" />
      ) : null}
    </g>
  );
}

const unit = (dx: number, dy: number) => {
  const length = Math.hypot(dx, dy) || 1;
  return { x: dx / length, y: dy / length };
};

/** Frame of the picture, in the API's units: wide enough that a lone node or a small ring is not blown up. */
const MIN_FRAME = { width: 760, height: 420 };

/**
 * The fleet drawn as the API lays it out (x/y around the orchestrator). Edges bow to one side, so the two directions
 * between a pair stay apart, and end in an arrowhead at the target's ring. Screen readers get one summary here; the
 * tables beside it hold every figure.
 */
export function FleetGraph({ graph }: { graph: FleetGraphData }) {
  const svg = useRef<SVGSVGElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const shownWidth = useElementWidth(svg, MIN_FRAME.width);
  const boxWidth = useElementWidth(box, 0);
  // Where the picture is wider than its box (a phone), it opens at its middle, the orchestrator, rather than at its
  // left edge; again when the box changes size (the phone turned), not on every refresh, so a scroll is kept.
  useLayoutEffect(() => {
    const el = box.current;
    if (el && boxWidth > 0) el.scrollLeft = (el.scrollWidth - el.clientWidth) / 2;
  }, [boxWidth, shownWidth]);
  const nodes = new Map(graph.nodes.map((n) => [n.id, n]));
  const xs = graph.nodes.map((n) => n.x);
  const ys = graph.nodes.map((n) => n.y);
  // The picture scales with the page; text is sized back by the scale, so names read at 13px on a phone and on a
  // desktop alike, and the margins grow to hold them when the picture is small.
  const rawWidth = Math.max(MIN_FRAME.width, Math.max(...xs) - Math.min(...xs) + 200);
  const scale = Math.max(0.3, shownWidth / rawWidth);
  const px = (size: number) => size / scale;
  const side = Math.max(100, px(80));
  let minX = Math.min(...xs) - side;
  let maxX = Math.max(...xs) + side;
  let minY = Math.min(...ys) - 50;
  let maxY = Math.max(...ys) + RADIUS.orchestrator + RING_GAP + px(40);
  if (maxX - minX < MIN_FRAME.width) {
    const grow = (MIN_FRAME.width - (maxX - minX)) / 2;
    minX -= grow;
    maxX += grow;
  }
  if (maxY - minY < MIN_FRAME.height) {
    const grow = (MIN_FRAME.height - (maxY - minY)) / 2;
    minY -= grow;
    maxY += grow;
  }
  const summary = `Fleet graph: ${graph.nodes.length} agent${graph.nodes.length === 1 ? '' : 's'} and ${graph.edges.length} connection${
    graph.edges.length === 1 ? '' : 's'
  }. The tables below list the same figures.`;

  return (
    <div className="mc-graph-scroll" ref={box}>
      <svg ref={svg} className="mc-graph" viewBox={`${minX} ${minY} ${maxX - minX} ${maxY - minY}`} role="img" aria-label={summary}>
        {graph.edges.map((edge) => {
          const a = nodes.get(edge.from);
          const b = nodes.get(edge.to);
          if (!a || !b || a === b) return null;
          const along = unit(b.x - a.x, b.y - a.y);
          // Long edges bow more, so one across the ring passes beside the centre node rather than through it.
          const bow = Math.min(90, Math.hypot(b.x - a.x, b.y - a.y) * 0.2);
          const control = { x: (a.x + b.x) / 2 - along.y * bow, y: (a.y + b.y) / 2 + along.x * bow };
          const out = unit(control.x - a.x, control.y - a.y);
          const into = unit(control.x - b.x, control.y - b.y);
          const strength = Math.min(1, Math.max(0, edge.strength));
          const width = 1 + strength * 7;
          // The arrowhead is drawn, not a marker, so it grows with the line but stays in proportion.
          const head = 7 + width * 1.5;
          const ra = RADIUS[a.role] + RING_GAP + 3;
          const rb = RADIUS[b.role] + RING_GAP + 4;
          const tip = { x: b.x + into.x * rb, y: b.y + into.y * rb };
          const base = { x: tip.x + into.x * head, y: tip.y + into.y * head };
          const wing = head * 0.6;
          return (
            <g key={edge.id} className="mc-edge-group" opacity={0.4 + strength * 0.55}>
              <path
                className="mc-edge"
                d={`M ${a.x + out.x * ra} ${a.y + out.y * ra} Q ${control.x} ${control.y} ${base.x} ${base.y}`}
                strokeWidth={width}
              />
              <path
                className="mc-arrow"
                d={`M ${tip.x} ${tip.y} L ${base.x - into.y * wing} ${base.y + into.x * wing} L ${base.x + into.y * wing} ${base.y - into.x * wing} Z`}
              />
            </g>
          );
        })}
        {graph.nodes.map((node) => {
          const r = RADIUS[node.role];
          return (
            <g key={node.id} transform={`translate(${node.x} ${node.y})`} className={`mc-node mc-status-${node.status}`}>
              <title>
                {node.asleep
                  ? `${node.name}: ${node.role}, asleep (a message or its next due job wakes it)`
                  : `${node.name}: ${node.role}, ${node.status}, load ${formatPercent(node.load)}, memory ${formatPercent(node.memory)}`}
              </title>
              <LoadRing r={r + RING_GAP} load={node.load} />
              <RoleShape role={node.role} r={r} className="mc-shape" />
              <text className="mc-name" y={r + RING_GAP + px(17)} fontSize={px(13)}>
                {node.name.length > 22 ? `${node.name.slice(0, 21)}…` : node.name}
              </text>
              <text className="mc-load" y={r + RING_GAP + px(32)} fontSize={px(11)}>
                {node.asleep ? 'asleep' : `${formatPercent(node.load)} load`}
              </text>
            </g>
          );
        })}
      </svg>
    </div>
  );
}

type EdgeBasis = FleetEdge['basis'];

/** What the edges' widths and strengths measure, by the basis the graph gives for them (unknown: said as such). */
export function edgesMeaning(basis: EdgeBasis): { legend: string; column: string; explained: string } {
  if (basis === 'messages') {
    return {
      legend: 'line width: messages between the pair (last 7 days)',
      column: 'Messages (share of the busiest pair)',
      explained: 'Messages one agent sent the other over the last 7 days, relative to the busiest pair.',
    };
  }
  if (basis === 'work') {
    return {
      legend: "line width: the agent's share of the fleet's recent work",
      column: 'Share of recent work',
      explained:
        "Your agents have not messaged each other in the last 7 days. Each line links the orchestrator to an agent, as strong as that agent's share of the fleet's recent work (tokens, relative to the busiest agent).",
    };
  }
  return { legend: 'line width: strength of the link', column: 'Strength', explained: '' };
}

/** The legend: status colours, role shapes, and what the ring and (when the graph has lines) line widths mean. */
export function FleetLegend({ hasEdges, basis }: { hasEdges: boolean; basis: EdgeBasis }) {
  return (
    <div className="mc-legend">
      <div>
        <h3>Status</h3>
        <ul>
          {STATUSES.map((status) => (
            <li key={status}>
              <svg width="18" height="18" viewBox="-9 -9 18 18" aria-hidden="true" className={`mc-node mc-status-${status}`}>
                <circle r="7" className="mc-shape" />
              </svg>
              <span>
                <strong>{status}</strong> <span className="muted">{STATUS_MEANING[status]}</span>
              </span>
            </li>
          ))}
        </ul>
      </div>
      <div>
        <h3>Role</h3>
        <ul>
          {ROLES.map((role) => (
            <li key={role}>
              <svg width="18" height="18" viewBox="-9 -9 18 18" aria-hidden="true" className="mc-node mc-legend-role">
                <RoleShape role={role} r={7} className="mc-shape" />
              </svg>
              <strong>{role}</strong>
            </li>
          ))}
        </ul>
      </div>
      <div>
        <h3>Reading it</h3>
        <ul>
          <li>
            <svg width="18" height="18" viewBox="-9 -9 18 18" aria-hidden="true">
              <LoadRing r={6} load={65} />
            </svg>
            <span>ring: CPU load, full circle is 100%</span>
          </li>
          {hasEdges ? (
            <li>
              <svg width="28" height="18" viewBox="0 0 28 18" aria-hidden="true">
                <path d="M 2 5 L 26 5" className="mc-edge" strokeWidth={1.5} />
                <path d="M 2 13 L 26 13" className="mc-edge" strokeWidth={6} />
              </svg>
              <span>{edgesMeaning(basis).legend}</span>
            </li>
          ) : null}
        </ul>
      </div>
    </div>
  );
}
