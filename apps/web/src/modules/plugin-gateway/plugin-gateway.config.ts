import { Env } from '@aop/core';
import { type Static, Type } from '@sinclair/typebox';

/** A USD amount as a decimal string (`0.05`): kept exact, never a float. */
const usdPrice = (def: string) => Type.String({ pattern: '^\\d{1,4}(\\.\\d{1,6})?$', default: def });

export const PluginGatewayEnvSchema = Type.Object({
  PLUGIN_PRICE_AGENT: usdPrice('0.05'),
  PLUGIN_PRICE_GENERATE_TEXT: usdPrice('0.01'),
  PLUGIN_PRICE_TTS: usdPrice('0.03'),
  PLUGIN_PRICE_STT: usdPrice('0.02'),
  PLUGIN_TIMEOUT_MS: Env.int(60_000, 100),
  SPEECH_BASE_URL: Env.url(),
  SPEECH_API_KEY: Env.optional(Type.String()),
  TTS_MODEL: Env.str('gpt-4o-mini-tts'),
  TTS_VOICE: Env.str('alloy'),
  STT_MODEL: Env.str('whisper-1'),
});

export interface PluginGatewayConfig {
  /**
   * Plugin gateway (spec §2.5, §4.4): USD price per plugin (decimal strings, the reference prices by default); the
   * OpenAI-compatible audio API of `tts`/`stt` (SPEECH_BASE_URL with SPEECH_API_KEY, else the LLM's URL and key), its
   * models and default voice; `timeoutMs` bounds each generate-text, tts and stt call. `generate-text` calls `demo.llm`
   * with a `demo.models` model; `agent` goes through `gateway`.
   */
  plugins: {
    prices: Record<'agent' | 'generate-text' | 'tts' | 'stt', string>;
    speech: { baseUrl: string; apiKey: string } | undefined;
    ttsModel: string;
    ttsVoice: string;
    sttModel: string;
    timeoutMs: number;
  };
}

export function toPluginGatewayConfig(
  env: Static<typeof PluginGatewayEnvSchema>,
  llm: { baseUrl: string; apiKey: string } | undefined,
): PluginGatewayConfig {
  return {
    plugins: {
      prices: {
        agent: env.PLUGIN_PRICE_AGENT,
        'generate-text': env.PLUGIN_PRICE_GENERATE_TEXT,
        tts: env.PLUGIN_PRICE_TTS,
        stt: env.PLUGIN_PRICE_STT,
      },
      // A speech key is never sent to the LLM's host or the other way round: a separate URL needs its own key.
      speech: env.SPEECH_BASE_URL ? (env.SPEECH_API_KEY ? { baseUrl: env.SPEECH_BASE_URL, apiKey: env.SPEECH_API_KEY } : undefined) : llm,
      ttsModel: env.TTS_MODEL,
      ttsVoice: env.TTS_VOICE,
      sttModel: env.STT_MODEL,
      timeoutMs: env.PLUGIN_TIMEOUT_MS,
    },
  };
}
