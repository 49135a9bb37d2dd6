/**
 * The `data:` payloads of a server-sent-event body, one per event (multi-line data joined with `\n`); comments and
 * other fields are skipped. Ends with the body.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const line = (text: string): string | undefined => {
    if (text === '') {
      const event = data.length > 0 ? data.join('\n') : undefined;
      data = [];
      return event;
    }
    if (text.startsWith('data:')) data.push(text.slice(text.startsWith('data: ') ? 6 : 5));
    return undefined;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        const event = line(buffer.slice(0, at).replace(/\r$/, ''));
        buffer = buffer.slice(at + 1);
        if (event !== undefined) yield event;
      }
      if (done) break;
    }
    const last = buffer === '' ? undefined : line(buffer.replace(/\r$/, ''));
    if (last !== undefined) yield last;
    const tail = line('');
    if (tail !== undefined) yield tail;
  } finally {
    // An early return (the caller stops reading) or an error must not leave the connection open.
    await reader.cancel().catch(() => undefined);
  }
}
