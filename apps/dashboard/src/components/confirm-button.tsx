import { type ReactNode, useState } from 'react';

/**
 * A button that asks before it acts: the first press shows "Confirm"/"Cancel" in place, so a stray click (or Enter)
 * never restarts or wipes anything.
 */
export function ConfirmButton({
  children,
  question,
  onConfirm,
  disabled,
  danger,
}: {
  children: ReactNode;
  question: string;
  onConfirm: () => void | Promise<void>;
  disabled?: boolean;
  danger?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className={`button ${danger ? 'danger' : 'secondary'}`} disabled={disabled} onClick={() => setAsking(true)}>
        {children}
      </button>
    );
  }
  return (
    <fieldset className="confirm" aria-label={question}>
      <legend>{question}</legend>
      <button
        type="button"
        className={`button ${danger ? 'danger' : 'primary'}`}
        // biome-ignore lint/a11y/noAutofocus: the confirmation replaces the button that had focus
        autoFocus
        onClick={async () => {
          setAsking(false);
          await onConfirm();
        }}
      >
        Confirm
      </button>
      <button type="button" className="button secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </fieldset>
  );
}
