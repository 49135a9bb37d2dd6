/**
 * A success message in a live region that is always in the page: screen readers announce a change of its text, which
 * they would miss if the region itself appeared with the text already in it.
 */
export function Announce({ message }: { message: string | undefined }) {
  return (
    <p role="status" className={message ? 'notice' : 'visually-hidden'}>
      {message}
    </p>
  );
}
