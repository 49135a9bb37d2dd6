import type { ReactNode } from 'react';

/** Loading, empty and error states: every view shows one of them before, or instead of, its data. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="state state-loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function ErrorState({ message, onRetry }: { message: string; onRetry?: () => void }) {
  return (
    <div className="state state-error" role="alert">
      <p>{message}</p>
      {onRetry ? (
        <button type="button" className="button secondary" onClick={onRetry}>
          Try again
        </button>
      ) : null}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state state-empty">{children}</div>;
}

/** The three states of one loaded resource in one place; `children` renders the data. */
export function Loaded<T>({
  resource,
  children,
  isEmpty,
  empty,
}: {
  resource: { data: T | undefined; error: string | undefined; loading: boolean; reload: () => Promise<void> };
  children: (data: T) => ReactNode;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
}) {
  if (resource.data === undefined) {
    if (resource.error) return <ErrorState message={resource.error} onRetry={() => void resource.reload()} />;
    return <Loading />;
  }
  return (
    <>
      {resource.error ? <ErrorState message={resource.error} onRetry={() => void resource.reload()} /> : null}
      {isEmpty?.(resource.data) ? <Empty>{empty}</Empty> : children(resource.data)}
    </>
  );
}

export function InlineError({ message }: { message: string | undefined }) {
  return message ? (
    <p className="inline-error" role="alert">
      {message}
    </p>
  ) : null;
}
