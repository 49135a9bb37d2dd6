import { newId } from '@aop/core';
import { type DB, isUniqueViolation, writeAudit } from '@aop/db';
import type { Kysely } from 'kysely';
import { newReferralCode } from '../accounts/accounts.service.js';

/** `Wallet:0xabcd...ef12`: the first 6 and last 4 characters of the lower-case address. */
export const walletUserName = (address: string) => `Wallet:${address.slice(0, 6)}...${address.slice(-4)}`;
/** The synthetic, verified email of a wallet account: `<address>@wallet.<product>`. */
export const walletEmail = (address: string, productName: string) => `${address.toLowerCase()}@wallet.${productName}`;

/**
 * The user of a wallet: the one whose `wallet_address` it is, else the one with
 * its synthetic email (linked now), else a new one. Two first sign-ins at once
 * meet at the unique indexes; the loser reads the winner's row.
 */
export async function findOrCreateWalletUser(
  db: Kysely<DB>,
  { address, productName, ip, now }: { address: string; productName: string; ip: string; now: Date },
): Promise<{ id: string; name: string; disabled: boolean }> {
  const email = walletEmail(address, productName);
  const find = () =>
    db
      .selectFrom('users')
      .select(['id', 'name', 'wallet_address', 'email_verified_at', 'disabled_at'])
      .where((eb) => eb.or([eb('wallet_address', '=', address), eb(eb.fn('lower', ['email']), '=', email)]))
      // The wallet's own row wins over an email match.
      .orderBy((eb) => eb.case().when('wallet_address', '=', address).then(0).else(1).end())
      .executeTakeFirst();

  for (let attempt = 0; ; attempt++) {
    const existing = await find();
    if (existing) {
      if (existing.wallet_address !== address || !existing.email_verified_at) {
        await db
          .updateTable('users')
          .set({ wallet_address: existing.wallet_address ?? address, email_verified_at: existing.email_verified_at ?? now })
          .where('id', '=', existing.id)
          .execute();
        if (!existing.wallet_address) await writeAudit(db, { userId: existing.id, action: 'wallet.link', target: address, ip });
      }
      return { id: existing.id, name: existing.name, disabled: Boolean(existing.disabled_at) };
    }

    const id = newId('user');
    const name = walletUserName(address);
    try {
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('users')
          .values({ id, email, name, wallet_address: address, email_verified_at: now, referral_code: newReferralCode() })
          .execute();
        await writeAudit(trx, { userId: id, action: 'user.register', target: address, ip, metadata: { method: 'wallet' } });
      });
      return { id, name, disabled: false };
    } catch (err) {
      // Another sign-in of this wallet won (read its row), or a referral-code collision (try again once).
      if (!isUniqueViolation(err) || attempt > 0) throw err;
    }
  }
}
