import { hash, verify } from '@node-rs/argon2';

/** Spec §8: passwords have at least 8 characters. */
export const PASSWORD_MIN_LENGTH = 8;
/** argon2 hashes whatever it is given; a cap keeps one request from costing seconds. */
export const PASSWORD_MAX_LENGTH = 256;

// argon2id with OWASP's recommended memory/time trade-off (19 MiB, 2 passes).
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

export const hashPassword = (password: string): Promise<string> => hash(password, OPTIONS);

// Verified against when the account does not exist, so "no such user" and
// "wrong password" take the same time.
let dummyHash: Promise<string> | undefined;

/** True when `password` matches `stored`; with no stored hash, spends the same time and answers false. */
export async function verifyPassword(stored: string | null | undefined, password: string): Promise<boolean> {
  if (!stored) {
    dummyHash ??= hashPassword('not-a-real-password-but-equally-expensive');
    await verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
