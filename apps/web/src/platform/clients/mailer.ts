import { newId } from '@aop/core';
import type { DB } from '@aop/db';
import type { Kysely } from 'kysely';
import { createTransport, type Transporter } from 'nodemailer';
import { isSuppressed } from './email-events.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** What the mail is for (`password-reset`, …); kept in the outbox. */
  kind: string;
  userId?: string | null;
}

/** `suppressed`: the address bounced or complained before (email provider events), so nothing was sent. */
export type MailOutcome = 'sent' | 'suppressed';

export interface Mailer {
  send(mail: Mail): Promise<MailOutcome>;
  close(): void;
}

/**
 * SMTP through nodemailer when `SMTP_URL` is set; otherwise mail goes to the
 * `email_outbox` table, where an operator (or a developer) reads it. Either way an
 * address on the suppression list (a hard bounce or a complaint) gets nothing.
 */
export function createMailer(
  options: {
    smtpUrl: string | undefined;
    from: string;
    /**
     * Also hands each outbox mail to this function (development only, see app.ts): a developer under `npm start` cannot
     * read the embedded database while the service holds it, and needs the links in sign-up and reset mails.
     */
    echo?: ((mail: Mail) => void) | undefined;
  },
  db: Kysely<DB>,
): Mailer {
  if (options.smtpUrl) {
    const transport: Transporter = createTransport(options.smtpUrl);
    return {
      async send(mail) {
        if (await isSuppressed(db, mail.to)) return 'suppressed';
        await transport.sendMail({ from: options.from, to: mail.to, subject: mail.subject, text: mail.text });
        return 'sent';
      },
      close: () => transport.close(),
    };
  }
  return {
    async send(mail) {
      if (await isSuppressed(db, mail.to)) return 'suppressed';
      await db
        .insertInto('email_outbox')
        .values({
          id: newId('message'),
          user_id: mail.userId ?? null,
          kind: mail.kind,
          to_address: mail.to,
          subject: mail.subject,
          body_text: mail.text,
        })
        .execute();
      options.echo?.(mail);
      return 'sent';
    },
    close() {},
  };
}
