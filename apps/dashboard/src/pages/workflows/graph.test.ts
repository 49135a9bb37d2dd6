import { describe, expect, it } from 'vitest';
import type { WorkflowNode } from '../../api-types.js';
import {
  addNode,
  connect,
  connectionProblem,
  edgeId,
  freeSpot,
  type Graph,
  graphFromApi,
  graphToApi,
  moveNodes,
  NODE_HEIGHT,
  NODE_WIDTH,
  nodeAt,
  removeNodes,
} from './graph.js';

const apiNode = (id: string, type: string, config: unknown, position: unknown = { x: 0, y: 0 }): WorkflowNode => ({
  id,
  type,
  config: JSON.stringify(config),
  position: JSON.stringify(position),
  createdAt: '2026-01-01T00:00:00.000Z',
});

describe('workflow graph', () => {
  it('reads keys, labels, settings and connections from the API nodes', () => {
    const graph = graphFromApi([
      apiNode('wn_1', 'trigger', { key: 'a', label: 'Start', next: ['b', 'gone', 'a', 'b'], event: 'webhook' }, { x: 10, y: 20 }),
      apiNode('wn_2', 'output', { key: 'b', label: 'Done' }, { x: -5, y: 'x' }),
    ]);
    expect(graph.nodes).toEqual([
      { key: 'a', type: 'trigger', label: 'Start', x: 10, y: 20, settings: { event: 'webhook' } },
      { key: 'b', type: 'output', label: 'Done', x: 0, y: 0, settings: {} },
    ]);
    // Unknown targets, self-connections and repeats are dropped.
    expect(graph.edges).toEqual([{ from: 'a', to: 'b' }]);
  });

  it('gives fresh keys to nodes made elsewhere and to duplicate keys', () => {
    const graph = graphFromApi([
      apiNode('wn_1', 'action', {}),
      apiNode('wn_2', 'action', { key: 'n1' }),
      apiNode('wn_3', 'action', { key: 'n1' }),
      { ...apiNode('wn_4', 'action', {}), config: 'not json', position: 'nor this' },
    ]);
    const keys = graph.nodes.map((n) => n.key);
    expect(new Set(keys).size).toBe(4);
    expect(keys[1]).toBe('n1');
  });

  it('round-trips through the API shape', () => {
    let graph: Graph = { nodes: [], edges: [] };
    const t = addNode(graph, 'trigger');
    const a = addNode(t.graph, 'action');
    graph = connect(a.graph, t.key, a.key);
    const sent = graphToApi(graph);
    expect(sent[0]?.config).toMatchObject({ key: t.key, next: [a.key], label: 'Trigger 1' });
    expect(sent[1]?.config).not.toHaveProperty('next');
    const back = graphFromApi(sent.map((n, i) => apiNode(`wn_${i}`, n.type, n.config, n.position)));
    expect(back).toEqual(graph);
  });

  it('refuses connections that make no sense', () => {
    let graph = addNode({ nodes: [], edges: [] }, 'trigger').graph;
    graph = addNode(graph, 'output').graph;
    const [trigger, output] = graph.nodes.map((n) => n.key) as [string, string];
    expect(connectionProblem(graph, output, trigger)).toMatch(/output ends the workflow/);
    expect(connectionProblem(graph, trigger, trigger)).toMatch(/itself/);
    graph = connect(graph, trigger, output);
    expect(connectionProblem(graph, trigger, output)).toMatch(/already connected/);
    expect(connect(graph, trigger, output)).toBe(graph);
  });

  it('removes nodes with their connections', () => {
    let graph = addNode({ nodes: [], edges: [] }, 'trigger').graph;
    graph = addNode(graph, 'action').graph;
    graph = addNode(graph, 'output').graph;
    const [t, a, o] = graph.nodes.map((n) => n.key) as [string, string, string];
    graph = connect(connect(graph, t, a), a, o);
    const after = removeNodes(graph, [a]);
    expect(after.nodes.map((n) => n.key)).toEqual([t, o]);
    expect(after.edges).toEqual([]);
    expect(graph.edges.map(edgeId)).toEqual([`${t}->${a}`, `${a}->${o}`]);
  });

  it('places new nodes without overlap and keeps moves on the canvas', () => {
    let graph: Graph = { nodes: [], edges: [] };
    for (let i = 0; i < 12; i++) graph = addNode(graph, 'action').graph;
    for (const [i, n] of graph.nodes.entries()) {
      for (const m of graph.nodes.slice(i + 1)) {
        expect(Math.abs(n.x - m.x) >= NODE_WIDTH || Math.abs(n.y - m.y) >= NODE_HEIGHT).toBe(true);
      }
    }
    const first = graph.nodes[0]!;
    const moved = moveNodes(graph, [first.key], -1000, 5);
    expect(moved.nodes[0]).toMatchObject({ x: 0, y: first.y + 5 });
    expect(freeSpot({ nodes: [], edges: [] }, 'output').x).toBeGreaterThan(freeSpot({ nodes: [], edges: [] }, 'trigger').x);
  });

  it('places new nodes inside the part of the canvas on screen', () => {
    // A narrow view (a phone, or the editor beside its side panel): the output's own column would be off-screen.
    const view = { x: 0, y: 0, width: 600, height: 400 };
    const inside = (n: { x: number; y: number }, v = view) =>
      n.x >= v.x && n.y >= v.y && n.x + NODE_WIDTH <= v.x + v.width && n.y + NODE_HEIGHT <= v.y + v.height;
    let graph: Graph = { nodes: [], edges: [] };
    for (const type of ['trigger', 'action', 'condition', 'output', 'action', 'output'] as const) {
      graph = addNode(graph, type, view).graph;
      const added = graph.nodes.at(-1)!;
      expect([type, inside(added)]).toEqual([type, true]);
    }
    for (const [i, n] of graph.nodes.entries()) {
      for (const m of graph.nodes.slice(i + 1)) {
        expect(Math.abs(n.x - m.x) >= NODE_WIDTH || Math.abs(n.y - m.y) >= NODE_HEIGHT).toBe(true);
      }
    }
    // Scrolled: the view's own area, not the canvas's top-left.
    const scrolled = { x: 900, y: 300, width: 500, height: 300 };
    expect(inside(freeSpot(graph, 'trigger', scrolled), scrolled)).toBe(true);
    // Every spot taken: still on screen.
    const tiny = { x: 0, y: 0, width: 240, height: 120 };
    const full = addNode(addNode({ nodes: [], edges: [] }, 'action', tiny).graph, 'action', tiny).graph;
    expect(inside(full.nodes[1]!, tiny)).toBe(true);
  });

  it('finds the node under a point, topmost first', () => {
    let graph = addNode({ nodes: [], edges: [] }, 'action').graph;
    graph = addNode(graph, 'action').graph;
    const [a, b] = graph.nodes as [Graph['nodes'][number], Graph['nodes'][number]];
    graph = moveNodes(graph, [b.key], a.x - b.x + 10, a.y - b.y + 10);
    expect(nodeAt(graph, a.x + 20, a.y + 20)?.key).toBe(b.key);
    expect(nodeAt(graph, a.x - 8, a.y + 5)?.key).toBe(a.key);
    expect(nodeAt(graph, 5000, 5000)).toBeUndefined();
  });
});
