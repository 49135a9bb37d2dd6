import { type KeyboardEvent, type MutableRefObject, type PointerEvent, useEffect, useId, useRef, useState } from 'react';
import {
  curve,
  edgeId,
  edgePath,
  GRID,
  type Graph,
  type GraphNode,
  NODE_HEIGHT,
  NODE_WIDTH,
  nodeAt,
  nodeTitle,
  TYPE_TITLES,
  type View,
} from './graph.js';

export interface Selection {
  nodes: string[];
  edge: string | null;
}

export interface CanvasProps {
  graph: Graph;
  selection: Selection;
  /** On: a press adds to (or removes from) the selection, as Shift does; for touch screens without a Shift key. */
  multiSelect: boolean;
  onSelectNode: (key: string, additive: boolean) => void;
  onSelectEdge: (id: string) => void;
  onClearSelection: () => void;
  onPlace: (positions: Map<string, { x: number; y: number }>) => void;
  onMove: (keys: string[], dx: number, dy: number) => void;
  onConnect: (from: string, to: string) => void;
  onDelete: (nodes: string[], edge: string | null) => void;
  /** Moves keyboard focus to a node (a new one, say); `seq` makes a repeat request for the same node count. */
  focusRequest: { key: string; seq: number } | null;
  /** The id of a short text on how to work a node from the keyboard. */
  describedBy: string;
  /** Set by the canvas: reads the part of the canvas on screen (canvas units), so new steps can be placed in it. */
  viewRef?: MutableRefObject<(() => View | null) | null>;
}

type Gesture =
  | {
      kind: 'move';
      pointerId: number;
      startX: number;
      startY: number;
      origin: Map<string, { x: number; y: number }>;
      moved: boolean;
      collapseTo: string | null;
    }
  | { kind: 'link'; pointerId: number; from: string }
  | { kind: 'pan'; pointerId: number; clientX: number; clientY: number; left: number; top: number; moved: boolean };

/** Pointer travel (px) below which a press is a click, not a drag: fingers wobble. */
const DRAG_THRESHOLD = 4;

const ARROWS: Record<string, [number, number]> = { ArrowUp: [0, -1], ArrowDown: [0, 1], ArrowLeft: [-1, 0], ArrowRight: [1, 0] };

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * The workflow drawn in SVG at one pixel per unit, inside a scrolling box. Pointer events drive everything, so mouse,
 * pen and touch behave alike: press a step to select it and drag it; drag from its right handle to another step to
 * connect; drag the empty background to scroll (the canvas takes over touch gestures, so it scrolls itself).
 */
export function WorkflowCanvas(props: CanvasProps) {
  const { graph, selection, multiSelect } = props;
  const svgRef = useRef<SVGSVGElement>(null);
  const wrapRef = useRef<HTMLDivElement>(null);
  const nodeEls = useRef(new Map<string, SVGGElement>());
  const gesture = useRef<Gesture | null>(null);
  const [link, setLink] = useState<{ from: string; x: number; y: number } | null>(null);
  const arrowId = `${useId()}-arrow`;

  useEffect(() => {
    if (props.focusRequest) nodeEls.current.get(props.focusRequest.key)?.focus();
  }, [props.focusRequest]);

  // One pixel is one canvas unit, so the scroll box's visible rectangle is the view.
  const { viewRef } = props;
  useEffect(() => {
    if (!viewRef) return;
    viewRef.current = () => {
      const wrap = wrapRef.current;
      return wrap ? { x: wrap.scrollLeft, y: wrap.scrollTop, width: wrap.clientWidth, height: wrap.clientHeight } : null;
    };
    return () => {
      viewRef.current = null;
    };
  }, [viewRef]);

  const width = Math.max(960, ...graph.nodes.map((n) => n.x + NODE_WIDTH + 240));
  const height = Math.max(440, ...graph.nodes.map((n) => n.y + NODE_HEIGHT + 160));
  const byKey = new Map(graph.nodes.map((n) => [n.key, n]));

  /** A pointer position in canvas units. */
  const toCanvas = (event: { clientX: number; clientY: number }) => {
    const matrix = svgRef.current?.getScreenCTM();
    if (!matrix) return { x: event.clientX, y: event.clientY };
    const p = new DOMPoint(event.clientX, event.clientY).matrixTransform(matrix.inverse());
    return { x: p.x, y: p.y };
  };

  const capture = (event: PointerEvent) => svgRef.current?.setPointerCapture(event.pointerId);

  const onNodePointerDown = (event: PointerEvent<SVGGElement>, node: GraphNode) => {
    if (event.button !== 0) return;
    event.stopPropagation();
    event.currentTarget.focus();
    const additive = multiSelect || event.shiftKey || event.ctrlKey || event.metaKey;
    const wasSelected = selection.nodes.includes(node.key);
    let keys: string[];
    if (additive) {
      props.onSelectNode(node.key, true);
      // Pressing a selected step in additive mode takes it out of the selection: nothing to drag.
      if (wasSelected) return;
      keys = [...selection.nodes, node.key];
    } else if (wasSelected) {
      keys = selection.nodes;
    } else {
      props.onSelectNode(node.key, false);
      keys = [node.key];
    }
    const start = toCanvas(event);
    const origin = new Map<string, { x: number; y: number }>();
    for (const key of keys) {
      const n = byKey.get(key);
      if (n) origin.set(key, { x: n.x, y: n.y });
    }
    capture(event);
    gesture.current = {
      kind: 'move',
      pointerId: event.pointerId,
      startX: start.x,
      startY: start.y,
      origin,
      moved: false,
      // A plain click on one step of a multiple selection narrows the selection to it, once it is clear it was no drag.
      collapseTo: !additive && wasSelected && selection.nodes.length > 1 ? node.key : null,
    };
  };

  const onHandlePointerDown = (event: PointerEvent, node: GraphNode) => {
    if (event.button !== 0) return;
    event.stopPropagation();
    capture(event);
    const p = toCanvas(event);
    gesture.current = { kind: 'link', pointerId: event.pointerId, from: node.key };
    setLink({ from: node.key, x: p.x, y: p.y });
  };

  const onEdgePointerDown = (event: PointerEvent<SVGGElement>, id: string) => {
    if (event.button !== 0) return;
    event.stopPropagation();
    event.currentTarget.focus();
    props.onSelectEdge(id);
  };

  const onBackgroundPointerDown = (event: PointerEvent<SVGSVGElement>) => {
    if (event.button !== 0 || !wrapRef.current) return;
    capture(event);
    gesture.current = {
      kind: 'pan',
      pointerId: event.pointerId,
      clientX: event.clientX,
      clientY: event.clientY,
      left: wrapRef.current.scrollLeft,
      top: wrapRef.current.scrollTop,
      moved: false,
    };
  };

  const onPointerMove = (event: PointerEvent<SVGSVGElement>) => {
    const g = gesture.current;
    if (!g || g.pointerId !== event.pointerId) return;
    if (g.kind === 'move') {
      const p = toCanvas(event);
      const dx = p.x - g.startX;
      const dy = p.y - g.startY;
      if (!g.moved && Math.hypot(dx, dy) < DRAG_THRESHOLD) return;
      g.moved = true;
      const positions = new Map<string, { x: number; y: number }>();
      for (const [key, o] of g.origin) positions.set(key, { x: o.x + dx, y: o.y + dy });
      props.onPlace(positions);
    } else if (g.kind === 'link') {
      const p = toCanvas(event);
      setLink({ from: g.from, x: p.x, y: p.y });
    } else if (wrapRef.current) {
      const dx = event.clientX - g.clientX;
      const dy = event.clientY - g.clientY;
      if (!g.moved && Math.hypot(dx, dy) < DRAG_THRESHOLD) return;
      g.moved = true;
      wrapRef.current.scrollLeft = g.left - dx;
      wrapRef.current.scrollTop = g.top - dy;
    }
  };

  const endGesture = (event: PointerEvent<SVGSVGElement>, cancelled: boolean) => {
    const g = gesture.current;
    if (!g || g.pointerId !== event.pointerId) return;
    gesture.current = null;
    if (svgRef.current?.hasPointerCapture(event.pointerId)) svgRef.current.releasePointerCapture(event.pointerId);
    if (cancelled) {
      setLink(null);
      return;
    }
    if (g.kind === 'move') {
      if (!g.moved && g.collapseTo) props.onSelectNode(g.collapseTo, false);
    } else if (g.kind === 'link') {
      setLink(null);
      const p = toCanvas(event);
      const target = nodeAt(graph, p.x, p.y);
      if (target && target.key !== g.from) props.onConnect(g.from, target.key);
    } else if (!g.moved) {
      props.onClearSelection();
    }
  };

  const deleteAndRefocus = (nodes: string[], edge: string | null) => {
    props.onDelete(nodes, edge);
    // The focused item is gone; keep the keyboard in the canvas rather than dropping it on the page.
    svgRef.current?.focus();
  };

  const onNodeKeyDown = (event: KeyboardEvent<SVGGElement>, node: GraphNode) => {
    const selected = selection.nodes.includes(node.key);
    const arrow = ARROWS[event.key];
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      props.onSelectNode(node.key, multiSelect || event.shiftKey || event.ctrlKey || event.metaKey);
    } else if (arrow) {
      if (!selected) return;
      event.preventDefault();
      const step = event.shiftKey ? GRID * 5 : GRID;
      props.onMove(selection.nodes, arrow[0] * step, arrow[1] * step);
    } else if (event.key === 'Delete' || event.key === 'Backspace') {
      event.preventDefault();
      deleteAndRefocus(selected ? selection.nodes : [node.key], selected ? selection.edge : null);
    } else if (event.key === 'Escape') {
      props.onClearSelection();
    }
  };

  const onEdgeKeyDown = (event: KeyboardEvent<SVGGElement>, id: string) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      props.onSelectEdge(id);
    } else if (event.key === 'Delete' || event.key === 'Backspace') {
      event.preventDefault();
      deleteAndRefocus([], id);
    } else if (event.key === 'Escape') {
      props.onClearSelection();
    }
  };

  const linkFrom = link ? byKey.get(link.from) : undefined;

  return (
    <div className="wf-canvas" ref={wrapRef}>
      {/* biome-ignore lint/a11y/useSemanticElements: an <svg> cannot be a <fieldset>; the group names the canvas */}
      <svg
        ref={svgRef}
        width={width}
        height={height}
        viewBox={`0 0 ${width} ${height}`}
        role="group"
        aria-label="Workflow canvas"
        tabIndex={-1}
        onPointerDown={onBackgroundPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={(e) => endGesture(e, false)}
        onPointerCancel={(e) => endGesture(e, true)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') setLink(null);
        }}
      >
        <defs>
          <marker id={arrowId} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" className="wf-arrow" />
          </marker>
          <pattern id={`${arrowId}-grid`} width={GRID * 4} height={GRID * 4} patternUnits="userSpaceOnUse">
            <circle cx="1" cy="1" r="1" className="wf-grid-dot" />
          </pattern>
        </defs>
        <rect width={width} height={height} fill={`url(#${arrowId}-grid)`} />

        {/* Connections first, so steps paint over their ends. Keyboard users reach them from the side panel. */}
        {graph.edges.map((edge) => {
          const from = byKey.get(edge.from);
          const to = byKey.get(edge.to);
          if (!from || !to) return null;
          const id = edgeId(edge);
          const d = edgePath(from, to);
          const selected = selection.edge === id;
          return (
            // biome-ignore lint/a11y/useSemanticElements: an SVG shape cannot be a <button>; role and keys make it one
            <g
              key={id}
              className={selected ? 'wf-edge selected' : 'wf-edge'}
              role="button"
              tabIndex={-1}
              aria-label={`Connection: ${nodeTitle(from)} to ${nodeTitle(to)}`}
              aria-pressed={selected}
              onPointerDown={(e) => onEdgePointerDown(e, id)}
              onKeyDown={(e) => onEdgeKeyDown(e, id)}
            >
              <path d={d} className="wf-edge-hit" />
              <path d={d} className="wf-edge-line" markerEnd={`url(#${arrowId})`} />
            </g>
          );
        })}

        {link && linkFrom ? (
          <path
            className="wf-edge-line wf-edge-preview"
            d={curve(linkFrom.x + NODE_WIDTH, linkFrom.y + NODE_HEIGHT / 2, link.x, link.y)}
            markerEnd={`url(#${arrowId})`}
          />
        ) : null}

        {graph.nodes.map((node) => {
          const selected = selection.nodes.includes(node.key);
          const title = nodeTitle(node);
          return (
            // biome-ignore lint/a11y/useSemanticElements: an SVG shape cannot be a <button>; role and keys make it one
            <g
              key={node.key}
              ref={(el) => {
                if (el) nodeEls.current.set(node.key, el);
                else nodeEls.current.delete(node.key);
              }}
              transform={`translate(${node.x} ${node.y})`}
              className={`wf-node wf-node-${node.type}${selected ? ' selected' : ''}`}
              role="button"
              tabIndex={0}
              aria-label={`${TYPE_TITLES[node.type]}: ${title}`}
              aria-pressed={selected}
              aria-describedby={props.describedBy}
              onPointerDown={(e) => onNodePointerDown(e, node)}
              onKeyDown={(e) => onNodeKeyDown(e, node)}
            >
              <rect className="wf-focus-ring" x={-5} y={-5} width={NODE_WIDTH + 10} height={NODE_HEIGHT + 10} rx={13} />
              <rect className="wf-node-body" width={NODE_WIDTH} height={NODE_HEIGHT} rx={10} />
              <rect className="wf-node-stripe" width={6} height={NODE_HEIGHT} rx={3} />
              <text className="wf-node-type" x={18} y={23}>
                {TYPE_TITLES[node.type]}
              </text>
              <text className="wf-node-label" x={18} y={45}>
                {truncate(title, 19)}
              </text>
              {node.type !== 'trigger' ? <circle className="wf-handle" cx={0} cy={NODE_HEIGHT / 2} r={6} /> : null}
              {node.type !== 'output' ? (
                <g className="wf-handle-out" onPointerDown={(e) => onHandlePointerDown(e, node)}>
                  {/* A finger-sized target around the small visible dot. */}
                  <circle className="wf-handle-hit" cx={NODE_WIDTH} cy={NODE_HEIGHT / 2} r={16} />
                  <circle className="wf-handle" cx={NODE_WIDTH} cy={NODE_HEIGHT / 2} r={7} />
                </g>
              ) : null}
            </g>
          );
        })}
      </svg>
    </div>
  );
}
