/**
 * The workflow editor's model and every change it can make, as pure functions (the canvas only draws and reports
 * gestures).
 *
 * The API stores nodes only (spec §2.7: `type`, JSON `config`, JSON `position`) and gives every node a new `id` each
 * time the workflow is saved, so connections cannot refer to server ids. Each node therefore carries its own stable
 * `key` in `config.key`, and its outgoing connections as the keys of their targets in `config.next`. Everything else
 * in `config` (`label` and any other setting) is kept as it came.
 */

import type { WorkflowNode } from '../../api-types.js';

export const NODE_TYPES = ['trigger', 'action', 'condition', 'output'] as const;
export type NodeType = (typeof NODE_TYPES)[number];

export const TYPE_TITLES: Record<NodeType, string> = {
  trigger: 'Trigger',
  action: 'Action',
  condition: 'Condition',
  output: 'Output',
};

/** What each type is for (spec §2.7), shown in the palette. */
export const TYPE_PURPOSES: Record<NodeType, string> = {
  trigger: 'starts the workflow',
  action: 'performs an operation',
  condition: 'branches on a check',
  output: 'delivers the final result',
};

/** The one setting each type is about, edited as text in the side panel; stored under `config[key]`. */
export const TYPE_FIELDS: Record<NodeType, { key: string; label: string; hint: string }> = {
  trigger: { key: 'event', label: 'Starts when', hint: 'For example: a webhook call, every:1h, or manually.' },
  action: { key: 'action', label: 'Operation', hint: 'What the agent does at this step, for example: summarise new mail.' },
  condition: {
    key: 'expression',
    label: 'Condition',
    hint: "Checked against the previous step's result; the workflow continues when it holds.",
  },
  output: { key: 'destination', label: 'Send result to', hint: 'For example: email, the bridge alerts channel, or a webhook URL.' },
};

/** `config` keys the editor owns: they are never edited as free settings. */
export const RESERVED_KEYS = ['label', 'key', 'next'] as const;

export const NODE_WIDTH = 168;
export const NODE_HEIGHT = 64;
/** Grid step for placing new nodes and for the keyboard: big enough to see, small enough to be precise. */
export const GRID = 8;

export interface GraphNode {
  key: string;
  type: NodeType;
  label: string;
  x: number;
  y: number;
  /** The rest of `config`, without the reserved keys. */
  settings: Record<string, unknown>;
}

export interface GraphEdge {
  from: string;
  to: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

/** A node as the API accepts it (objects are fine on the way in). */
export interface ApiNodeInput {
  type: NodeType;
  config: Record<string, unknown>;
  position: { x: number; y: number };
}

export const emptyGraph: Graph = { nodes: [], edges: [] };

export const edgeId = (edge: GraphEdge): string => `${edge.from}->${edge.to}`;

export function nodeTitle(node: GraphNode): string {
  return node.label.trim() || TYPE_TITLES[node.type];
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const finiteOr = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isFinite(value) ? value : fallback);

/**
 * The editor's graph from the API's nodes. A node without a usable key (made by another client, or a duplicate) gets
 * a fresh one; connections to keys that no longer exist are dropped, as are repeats and self-connections.
 */
export function graphFromApi(apiNodes: readonly WorkflowNode[]): Graph {
  const configs = apiNodes.map((n) => parseObject(n.config));
  const taken = new Set<string>();
  const keys = configs.map((config) => {
    const key = config.key;
    if (typeof key === 'string' && key !== '' && !taken.has(key)) {
      taken.add(key);
      return key;
    }
    return null;
  });
  let counter = 0;
  const fresh = () => {
    let key: string;
    do key = `n${++counter}`;
    while (taken.has(key));
    taken.add(key);
    return key;
  };
  const nodes: GraphNode[] = apiNodes.map((apiNode, i) => {
    const config = configs[i]!;
    const position = parseObject(apiNode.position);
    const settings = { ...config };
    for (const reserved of RESERVED_KEYS) delete settings[reserved];
    return {
      key: keys[i] ?? fresh(),
      // The API only stores the four types; anything else would have been refused on save.
      type: (NODE_TYPES as readonly string[]).includes(apiNode.type) ? (apiNode.type as NodeType) : 'action',
      label: typeof config.label === 'string' ? config.label : '',
      x: Math.max(0, finiteOr(position.x, 0)),
      y: Math.max(0, finiteOr(position.y, 0)),
      settings,
    };
  });
  const known = new Set(nodes.map((n) => n.key));
  const edges: GraphEdge[] = [];
  const seen = new Set<string>();
  nodes.forEach((node, i) => {
    const next = configs[i]!.next;
    if (!Array.isArray(next)) return;
    for (const to of next) {
      if (typeof to !== 'string' || !known.has(to) || to === node.key) continue;
      const edge = { from: node.key, to };
      if (seen.has(edgeId(edge))) continue;
      seen.add(edgeId(edge));
      edges.push(edge);
    }
  });
  return { nodes, edges };
}

/** The nodes to send in a PUT: order kept, positions rounded, connections in `config.next`. */
export function graphToApi(graph: Graph): ApiNodeInput[] {
  return graph.nodes.map((node) => {
    const next = graph.edges.filter((e) => e.from === node.key).map((e) => e.to);
    const config: Record<string, unknown> = { ...node.settings, label: node.label, key: node.key };
    if (next.length > 0) config.next = next;
    return { type: node.type, config, position: { x: Math.round(node.x), y: Math.round(node.y) } };
  });
}

/** Why `from` cannot be connected to `to`, or null when it can. */
export function connectionProblem(graph: Graph, from: string, to: string): string | null {
  const source = graph.nodes.find((n) => n.key === from);
  const target = graph.nodes.find((n) => n.key === to);
  if (!source || !target) return 'Both steps must exist to connect them';
  if (from === to) return 'A step cannot connect to itself';
  if (source.type === 'output') return 'An output ends the workflow: it cannot connect onwards';
  if (target.type === 'trigger') return 'A trigger starts the workflow: nothing can connect into it';
  if (graph.edges.some((e) => e.from === from && e.to === to)) return 'These steps are already connected';
  return null;
}

export function connect(graph: Graph, from: string, to: string): Graph {
  if (connectionProblem(graph, from, to)) return graph;
  return { ...graph, edges: [...graph.edges, { from, to }] };
}

export function removeEdge(graph: Graph, id: string): Graph {
  return { ...graph, edges: graph.edges.filter((e) => edgeId(e) !== id) };
}

/** Removes the nodes and every connection that touches them. */
export function removeNodes(graph: Graph, keys: readonly string[]): Graph {
  const gone = new Set(keys);
  return {
    nodes: graph.nodes.filter((n) => !gone.has(n.key)),
    edges: graph.edges.filter((e) => !gone.has(e.from) && !gone.has(e.to)),
  };
}

export function updateNode(graph: Graph, key: string, patch: Partial<Omit<GraphNode, 'key'>>): Graph {
  return { ...graph, nodes: graph.nodes.map((n) => (n.key === key ? { ...n, ...patch } : n)) };
}

/** Puts nodes at the given positions; the canvas has no negative side, so positions stop at 0. */
export function placeNodes(graph: Graph, positions: ReadonlyMap<string, { x: number; y: number }>): Graph {
  return {
    ...graph,
    nodes: graph.nodes.map((n) => {
      const p = positions.get(n.key);
      return p ? { ...n, x: Math.max(0, Math.round(p.x)), y: Math.max(0, Math.round(p.y)) } : n;
    }),
  };
}

export function moveNodes(graph: Graph, keys: readonly string[], dx: number, dy: number): Graph {
  const positions = new Map<string, { x: number; y: number }>();
  for (const n of graph.nodes) if (keys.includes(n.key)) positions.set(n.key, { x: n.x + dx, y: n.y + dy });
  return placeNodes(graph, positions);
}

function overlaps(graph: Graph, x: number, y: number): boolean {
  return graph.nodes.some((n) => Math.abs(n.x - x) < NODE_WIDTH + GRID * 2 && Math.abs(n.y - y) < NODE_HEIGHT + GRID * 2);
}

/** The part of the canvas on screen, in canvas units. */
export interface View {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * A free spot for a new node: triggers start on the left, outputs on the right, the rest in between; the first free
 * row in that column wins, and a full column spills into the next one.
 *
 * With `view` (the part of the canvas on screen) the spot is inside it: the columns and rows are those that fit in the
 * view, a type whose column is off-screen takes the rightmost one that fits, and when every spot in view is taken the
 * node goes to the view's top-left corner (overlapping, but where the user is looking) rather than out of sight.
 */
export function freeSpot(graph: Graph, type: NodeType, view?: View): { x: number; y: number } {
  const column = { trigger: 0, action: 1, condition: 2, output: 3 }[type];
  const stepX = NODE_WIDTH + GRID * 8;
  const stepY = NODE_HEIGHT + GRID * 4;
  if (!view) {
    for (let col = column; ; col++) {
      for (let row = 0; row < 8; row++) {
        const x = GRID * 4 + col * stepX;
        const y = GRID * 4 + row * stepY;
        if (!overlaps(graph, x, y)) return { x, y };
      }
    }
  }
  const snap = (v: number) => Math.ceil(Math.max(0, v) / GRID) * GRID;
  const left = snap(view.x) + GRID * 4;
  const top = snap(view.y) + GRID * 4;
  const columns = Math.max(1, Math.floor((view.x + view.width - left - NODE_WIDTH) / stepX) + 1);
  const rows = Math.max(1, Math.floor((view.y + view.height - top - NODE_HEIGHT) / stepY) + 1);
  const first = Math.min(column, columns - 1);
  // The type's own column first, then those to its right, then those to its left: all of them on screen.
  const order = [
    ...Array.from({ length: columns - first }, (_, i) => first + i),
    ...Array.from({ length: first }, (_, i) => first - 1 - i),
  ];
  for (const col of order) {
    for (let row = 0; row < rows; row++) {
      const x = left + col * stepX;
      const y = top + row * stepY;
      if (!overlaps(graph, x, y)) return { x, y };
    }
  }
  return { x: left, y: top };
}

/** A key no node uses yet. */
export function newKey(graph: Graph): string {
  const taken = new Set(graph.nodes.map((n) => n.key));
  let i = graph.nodes.length + 1;
  while (taken.has(`n${i}`)) i++;
  return `n${i}`;
}

export function addNode(graph: Graph, type: NodeType, view?: View): { graph: Graph; key: string } {
  const key = newKey(graph);
  const count = graph.nodes.filter((n) => n.type === type).length + 1;
  const node: GraphNode = { key, type, label: `${TYPE_TITLES[type]} ${count}`, ...freeSpot(graph, type, view), settings: {} };
  return { graph: { ...graph, nodes: [...graph.nodes, node] }, key };
}

/** The topmost node under a canvas point; the input handle just left of a node counts as the node. */
export function nodeAt(graph: Graph, x: number, y: number, slack = 12): GraphNode | undefined {
  for (let i = graph.nodes.length - 1; i >= 0; i--) {
    const n = graph.nodes[i]!;
    if (x >= n.x - slack && x <= n.x + NODE_WIDTH + slack && y >= n.y - slack && y <= n.y + NODE_HEIGHT + slack) return n;
  }
  return undefined;
}

/** The connection's curve: out of the source's right handle, into the target's left handle. */
export function edgePath(from: { x: number; y: number }, to: { x: number; y: number }): string {
  const sx = from.x + NODE_WIDTH;
  const sy = from.y + NODE_HEIGHT / 2;
  const tx = to.x;
  const ty = to.y + NODE_HEIGHT / 2;
  return curve(sx, sy, tx, ty);
}

export function curve(sx: number, sy: number, tx: number, ty: number): string {
  // Control points pull horizontally, more when the target is behind the source, so the curve never folds on itself.
  const pull = Math.max(48, Math.abs(tx - sx) / 2, sx > tx ? 120 : 0);
  return `M ${sx} ${sy} C ${sx + pull} ${sy}, ${tx - pull} ${ty}, ${tx} ${ty}`;
}
