import { DomainError } from '@aop/core';
import type { WebConfig } from '../../../config.js';
import { type GatewayPlugin, MODEL_ID, type PluginLog, isAbsent, pluginFailed, pluginUnavailable } from './types.js';

/** OpenAI's limit on the text of one speech request. */
export const TTS_MAX_CHARS = 4096;
/** The most audio a speech answer may carry; more is a misbehaving upstream, not a longer sentence. */
export const TTS_MAX_AUDIO_BYTES = 16 * 1024 * 1024;

/** OpenAI's `response_format` values of `/audio/speech` and what each is served as. */
export const TTS_FORMATS: Record<string, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** Audio formats `/audio/transcriptions` takes, by the file extension it reads them from, with their content types. */
export const STT_FORMATS: Record<string, string> = {
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  mp3: 'audio/mpeg',
  mp4: 'audio/mp4',
  mpeg: 'audio/mpeg',
  mpga: 'audio/mpeg',
  oga: 'audio/ogg',
  ogg: 'audio/ogg',
  wav: 'audio/wav',
  webm: 'audio/webm',
};

/** Content types a `data:` URL may name, as the format they are sent as. */
const FORMAT_OF_TYPE: Record<string, string> = {
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/webm': 'webm',
  'video/webm': 'webm',
  'video/mp4': 'mp4',
};

const VOICE = /^[A-Za-z0-9_-]{1,64}$/;
const LANGUAGE = /^[a-z]{2}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([^;,]*)(?:;[^;,]*)*;base64,/i;

type SpeechConfig = Pick<WebConfig, 'plugins'>;

const endpointUrl = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, '')}${path}`;

/** A model the body names, or the configured one. */
function modelOf(value: unknown, fallback: string): string {
  if (isAbsent(value)) return fallback;
  if (typeof value !== 'string' || !MODEL_ID.test(value)) throw new DomainError('MODEL_NOT_MODEL_ID');
  return value;
}

/**
 * One call to the speech API: the key as Bearer, no redirect followed (the key must not travel to another host), the
 * plugin timeout plus the client's signal. Returns the response when it is 2xx; any other outcome is the plugin's 502
 * in fixed words, the reason logged.
 */
async function speechCall(
  plugin: string,
  speech: { baseUrl: string; apiKey: string },
  path: string,
  init: { body: string | FormData; headers?: Record<string, string> },
  timeoutMs: number,
  run: { log: PluginLog; signal: AbortSignal },
): Promise<Response> {
  const timeout = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(endpointUrl(speech.baseUrl, path), {
      method: 'POST',
      headers: { ...init.headers, authorization: `Bearer ${speech.apiKey}` },
      body: init.body,
      redirect: 'manual',
      signal: AbortSignal.any([timeout, run.signal]),
    });
  } catch (err) {
    const reason = timeout.aborted ? `timed out after ${timeoutMs} ms` : run.signal.aborted ? 'client went away' : 'unreachable';
    run.log.warn({ reason, cause: (err as { cause?: { code?: unknown } })?.cause?.code }, `gateway plugin ${plugin}: speech API failed`);
    throw pluginFailed(plugin, timeout.aborted ? 'The speech provider timed out' : 'The speech provider did not answer');
  }
  if (res.status < 200 || res.status >= 300) {
    await res.body?.cancel().catch(() => undefined);
    run.log.warn({ status: res.status }, `gateway plugin ${plugin}: speech API refused`);
    throw pluginFailed(plugin, `The speech provider answered HTTP ${res.status}`);
  }
  return res;
}

/** The body of a speech answer, at most `TTS_MAX_AUDIO_BYTES`; read under the same deadline as the request. */
async function readAudio(res: Response, run: { log: PluginLog }): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > TTS_MAX_AUDIO_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw pluginFailed('tts', 'The speech provider answered with too much audio');
  }
  let bytes: Buffer;
  try {
    bytes = Buffer.from(await res.arrayBuffer());
  } catch {
    run.log.warn({}, 'gateway plugin tts: audio download failed');
    throw pluginFailed('tts', 'The speech provider did not finish its answer');
  }
  if (bytes.length > TTS_MAX_AUDIO_BYTES) throw pluginFailed('tts', 'The speech provider answered with too much audio');
  if (bytes.length === 0) throw pluginFailed('tts', 'The speech provider answered without audio');
  return bytes;
}

/**
 * `tts`: `POST {base}/audio/speech` of the OpenAI-compatible speech API (SPEECH_BASE_URL, else the LLM's). Body:
 * `text` (required, ≤ 4096 characters), optional `voice` (default TTS_VOICE), `format` (`mp3` default, `opus`, `aac`,
 * `flac`, `wav`, `pcm`), `model` (default TTS_MODEL). The answer's `message` is the audio in base64 and `contentType`
 * says what it is. Never streams.
 */
export function ttsPlugin(config: SpeechConfig, priceUsd: string | null): GatewayPlugin {
  return {
    id: 'tts',
    auth: false,
    streaming: false,
    priceUsd,
    prepare(fields) {
      const { text } = fields;
      if (typeof text !== 'string' || text.trim() === '') throw new DomainError('TEXT_REQUIRED');
      if (text.length > TTS_MAX_CHARS) throw new DomainError('TEXT_TOO_LONG', { max: TTS_MAX_CHARS });
      const voice = isAbsent(fields.voice) ? config.plugins.ttsVoice : fields.voice;
      if (typeof voice !== 'string' || !VOICE.test(voice)) throw new DomainError('VOICE_NOT_VOICE_NAME');
      const format = isAbsent(fields.format) ? 'mp3' : fields.format;
      if (typeof format !== 'string' || !TTS_FORMATS[format]) {
        throw new DomainError('UNSUPPORTED_AUDIO_FORMAT', { allowed: Object.keys(TTS_FORMATS).join(', ') });
      }
      const model = modelOf(fields.model, config.plugins.ttsModel);
      const speech = config.plugins.speech;
      if (!speech) throw pluginUnavailable('tts', 'No speech provider is configured on this server');

      return async (run) => {
        const res = await speechCall(
          'tts',
          speech,
          '/audio/speech',
          {
            headers: { 'content-type': 'application/json', accept: 'audio/*' },
            body: JSON.stringify({ model, input: text, voice, response_format: format }),
          },
          config.plugins.timeoutMs,
          run,
        );
        const audio = await readAudio(res, run);
        const served = res.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
        const contentType = served?.startsWith('audio/') ? served : (TTS_FORMATS[format] as string);
        return { message: audio.toString('base64'), extra: { contentType, format, voice, model } };
      };
    },
  };
}

/** The format of audio bytes from their signature, when it is one the transcription API takes. */
export function sniffAudioFormat(bytes: Buffer): string | undefined {
  const ascii = (start: number, end: number) => bytes.subarray(start, end).toString('latin1');
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WAVE') return 'wav';
  if (ascii(0, 4) === 'OggS') return 'ogg';
  if (ascii(0, 4) === 'fLaC') return 'flac';
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) return 'webm';
  if (ascii(4, 8) === 'ftyp') return 'm4a';
  if (ascii(0, 3) === 'ID3') return 'mp3';
  if (bytes.length >= 2 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0) return 'mp3';
  return undefined;
}

/** `audio` as base64 (or a base64 `data:` URL) → its bytes and format (`format` field, else the URL's type, else sniffed). */
export function sttAudio(fields: Record<string, unknown>): { bytes: Buffer; format: string } {
  const { audio } = fields;
  if (typeof audio !== 'string' || audio.trim() === '') throw new DomainError('AUDIO_REQUIRED_BASE64');
  const dataUrl = DATA_URL.exec(audio);
  const encoded = (dataUrl ? audio.slice(dataUrl[0].length) : audio).replace(/\s+/g, '');
  if (encoded === '' || encoded.length % 4 === 1 || !BASE64.test(encoded)) throw new DomainError('AUDIO_BASE64_ENCODED');
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length === 0) throw new DomainError('AUDIO_BASE64_ENCODED');
  let format: string | undefined;
  if (!isAbsent(fields.format)) {
    if (typeof fields.format !== 'string' || !STT_FORMATS[fields.format]) {
      throw new DomainError('UNSUPPORTED_AUDIO_FORMAT', { allowed: Object.keys(STT_FORMATS).join(', ') });
    }
    format = fields.format;
  } else {
    format = FORMAT_OF_TYPE[dataUrl?.[1]?.toLowerCase() ?? ''] ?? sniffAudioFormat(bytes);
  }
  if (!format) throw new DomainError('UNRECOGNISED_AUDIO', { allowed: Object.keys(STT_FORMATS).join(', ') });
  return { bytes, format };
}

/**
 * `stt`: `POST {base}/audio/transcriptions` (multipart, as OpenAI's API takes it) of the OpenAI-compatible speech API.
 * Body: `audio` (required; base64 or a base64 `data:` URL, within the 1 MB body limit), optional `format` (otherwise
 * read from the data URL or the audio's signature), `language` (ISO 639-1), `model` (default STT_MODEL). The answer's
 * `message` is the transcript. Never streams.
 */
export function sttPlugin(config: SpeechConfig, priceUsd: string | null): GatewayPlugin {
  return {
    id: 'stt',
    auth: false,
    streaming: false,
    priceUsd,
    prepare(fields) {
      const { bytes, format } = sttAudio(fields);
      const { language } = fields;
      if (!isAbsent(language) && (typeof language !== 'string' || !LANGUAGE.test(language))) {
        throw new DomainError('INVALID_LANGUAGE');
      }
      const model = modelOf(fields.model, config.plugins.sttModel);
      const speech = config.plugins.speech;
      if (!speech) throw pluginUnavailable('stt', 'No speech provider is configured on this server');

      return async (run) => {
        const form = new FormData();
        form.append('file', new Blob([bytes], { type: STT_FORMATS[format] as string }), `audio.${format}`);
        form.append('model', model);
        form.append('response_format', 'json');
        if (typeof language === 'string' && language) form.append('language', language);
        const res = await speechCall('stt', speech, '/audio/transcriptions', { body: form }, config.plugins.timeoutMs, run);
        let text: unknown;
        try {
          text = ((await res.json()) as { text?: unknown } | null)?.text;
        } catch {
          text = undefined;
        }
        if (typeof text !== 'string') throw pluginFailed('stt', 'The speech provider answered without a transcript');
        return { message: text, extra: { model } };
      };
    },
  };
}
