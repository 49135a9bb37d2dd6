import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { type FakeLlm, startFakeLlm } from './llm.js';

// The fake LLM's tool calls, read by the official openai client: what OpenClaw's OpenAI-compatible provider reads too.

let llm: FakeLlm;
afterAll(() => llm?.close());

describe('fake LLM tool calls', () => {
  it('asks for the tool while the user spoke last, answers in text once the tool’s result is in; plain and streamed', async () => {
    llm = await startFakeLlm({
      reply: 'done with the tool',
      toolCall: (body) => {
        const messages = body.messages as Array<{ role: string }>;
        return messages.at(-1)?.role === 'user' ? { name: 'exec', arguments: { command: 'seq 1 3' } } : null;
      },
    });
    const client = new OpenAI({ baseURL: llm.url, apiKey: 'unused' });
    const tools = [{ type: 'function' as const, function: { name: 'exec', parameters: { type: 'object', properties: {} } } }];

    const first = await client.chat.completions.create({ model: 'fake-1', tools, messages: [{ role: 'user', content: 'count' }] });
    const [choice] = first.choices;
    expect(choice?.finish_reason).toBe('tool_calls');
    expect(choice?.message.content).toBeNull();
    const call = choice?.message.tool_calls?.[0];
    expect(call).toMatchObject({ type: 'function', function: { name: 'exec' } });
    expect(JSON.parse(call?.type === 'function' ? call.function.arguments : '{}')).toEqual({ command: 'seq 1 3' });

    const second = await client.chat.completions.create({
      model: 'fake-1',
      tools,
      messages: [
        { role: 'user', content: 'count' },
        { role: 'assistant', content: null, tool_calls: first.choices[0]?.message.tool_calls ?? [] },
        { role: 'tool', tool_call_id: call?.id ?? '', content: '1\n2\n3' },
      ],
    });
    expect(second.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'done with the tool' } });

    const stream = await client.chat.completions.create({
      model: 'fake-1',
      tools,
      stream: true,
      messages: [{ role: 'user', content: 'count' }],
    });
    const deltas: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const toolCall of chunk.choices[0]?.delta.tool_calls ?? []) deltas.push(toolCall.function?.arguments ?? '');
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('tool_calls');
    expect(JSON.parse(deltas.join(''))).toEqual({ command: 'seq 1 3' });
  });
});
