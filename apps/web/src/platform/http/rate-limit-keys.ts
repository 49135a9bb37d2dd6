import { sha256Hex } from '@aop/core';
import type { FastifyRequest } from 'fastify';
import { SESSION_COOKIE } from '../sessions.js';

/** Limits count per signed-in session (by the hash of its cookie), so people behind one address do not share them. */
export const perSession = (request: FastifyRequest) => {
  const token = request.cookies[SESSION_COOKIE];
  return token ? `session:${sha256Hex(token)}` : request.ip;
};
