import { type App, DomainError, HttpError, registerQueueDepths } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { SummarizerConfig } from '../config.js';
import { type FetchPageOptions, FetchPageError } from '../services/fetch-page.js';
import { ExtractFailedError, PageService } from '../services/page-service.js';

export const VERSION = '1.0.0';

const UrlBodySchema = Type.Object({ url: Type.Optional(Type.Unknown()) }, { additionalProperties: true });

const SummaryResponseSchema = Type.Object({
  url: Type.String(),
  title: Type.String(),
  description: Type.String(),
  headings: Type.Array(Type.String()),
  paragraphs: Type.Array(Type.String()),
  wordCount: Type.Integer(),
  fetchedAt: Type.String({ format: 'date-time' }),
});

const ExtractResponseSchema = Type.Object({
  url: Type.String(),
  links: Type.Array(Type.Object({ href: Type.String(), text: Type.String() })),
  images: Type.Array(Type.Object({ src: Type.String(), alt: Type.String() })),
  meta: Type.Record(Type.String(), Type.String()),
  fetchedAt: Type.String({ format: 'date-time' }),
});

const ErrorSchema = Type.Object({ error: Type.String() });

/** The `url` of the body, or 400 `url required` (spec §4.7). */
function requiredUrl(request: FastifyRequest): string {
  const url = (request.body as { url?: unknown } | undefined)?.url;
  if (typeof url !== 'string' || url.trim() === '') throw new DomainError('URL_REQUIRED');
  return url.trim();
}

/** Spec §4.7: the standalone summarizer. */
export async function summarizerRoutes(app: App, { config }: { config: SummarizerConfig }): Promise<void> {
  const service = `${config.productName}-web-summarizer`;
  const fetchOptions: FetchPageOptions = {
    userAgent: `${config.productName}-WebSummarizer/1.0`,
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.maxBytes,
    maxRedirects: config.maxRedirects,
    allowPrivate: config.allowPrivate,
  };

  const pages = new PageService({
    fetch: fetchOptions,
    cache: config.cache,
    workers: config.workers,
    workerMinBytes: config.workerMinBytes,
  });
  // Worker threads must end with the server, or they'd keep a closed app's process (and tests) alive.
  app.addHook('onClose', async () => {
    await pages.close();
  });
  // Without workers (SUMMARIZER_WORKERS ≤ 1) pages are extracted in the request: nothing ever waits.
  registerQueueDepths(app.metrics.registry, () => [{ queue: 'extract', depth: pages.pool?.queued ?? 0 }]);

  async function load(url: string) {
    try {
      return await pages.load(url);
    } catch (err) {
      if (err instanceof FetchPageError) throw new HttpError(err.status, err.message);
      // Spec §4.7: a page we could not parse is a 500 like one we could not fetch.
      if (err instanceof ExtractFailedError) throw new HttpError(500, err.message);
      throw err;
    }
  }

  app.get('/', { schema: { tags: ['summarizer'] } }, async () => ({
    service,
    description:
      'Fetches a public web page and returns its summary (title, description, headings, paragraphs) or its links, images and meta tags.',
    endpoints: {
      'POST /api/summarize': 'Summarize a page: body { url } → title, description, headings, paragraphs, wordCount',
      'POST /api/extract': 'Extract from a page: body { url } → links, images, meta tags',
      'GET /health': 'Service health',
    },
    payment: config.payment,
  }));

  app.get('/health', { schema: { tags: ['summarizer'] } }, async () => ({ status: 'ok', service, version: VERSION }));

  await app.register(
    async (api) => {
      api.addHook(
        'onRequest',
        api.rateLimit({ name: 'summarizer', max: config.rateLimitPerMinute, windowMs: 60_000, message: 'Too many requests' }),
      );
      const routeConfig = { invalidBody: 'URL_REQUIRED' as const };

      api.post(
        '/summarize',
        {
          config: routeConfig,
          schema: {
            tags: ['summarizer'],
            body: UrlBodySchema,
            response: { 200: SummaryResponseSchema, '4xx': ErrorSchema, '5xx': ErrorSchema },
          },
        },
        async (request) => {
          const url = requiredUrl(request);
          const { summary } = await load(url);
          return { url, ...summary, fetchedAt: new Date().toISOString() };
        },
      );

      api.post(
        '/extract',
        {
          config: routeConfig,
          schema: {
            tags: ['summarizer'],
            body: UrlBodySchema,
            response: { 200: ExtractResponseSchema, '4xx': ErrorSchema, '5xx': ErrorSchema },
          },
        },
        async (request) => {
          const url = requiredUrl(request);
          const { extraction } = await load(url);
          return { url, ...extraction, fetchedAt: new Date().toISOString() };
        },
      );
    },
    { prefix: '/api' },
  );
}
