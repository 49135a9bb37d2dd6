import { type ReactNode, useEffect, useRef, useState } from 'react';
import { Link, useLocation } from 'wouter';
import { useSession } from '../session.js';
import { useTableCards } from './table-cards.js';

const NAV = [
  { href: '/dashboard', label: 'Agents' },
  { href: '/workflows', label: 'Workflows' },
  { href: '/mission-control', label: 'Mission control' },
  { href: '/costs', label: 'Costs' },
  { href: '/settings', label: 'Settings' },
] as const;

const PAYMENTS = { href: '/payments', label: 'Payments' } as const;
/** The bridge bus is an operator tool: its routes refuse other accounts (without a secret) or ask for the secret. */
const BRIDGE = { href: '/bridge', label: 'Bridge' } as const;

/** The signed-in frame: a skip link, the navigation (a menu button on phones) and the page. */
export function Layout({ children }: { children: ReactNode }) {
  const { user, signOut } = useSession();
  const [location, navigate] = useLocation();
  const [menuOpen, setMenuOpen] = useState(false);
  const main = useRef<HTMLElement>(null);
  // Every data table of every page: stacked cards on a phone (table-cards.ts, styles.css "Tables").
  useTableCards(main);

  // A new page: close the phone menu and move focus to the content, as a full page load would.
  useEffect(() => {
    setMenuOpen(false);
    main.current?.focus();
  }, [location]);

  const links = [...NAV, PAYMENTS, ...(user?.isAdmin ? [BRIDGE] : [])];
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link href="/dashboard" className="brand">
          Agent Ops
        </Link>
        <button
          type="button"
          className="button secondary menu-button"
          aria-expanded={menuOpen}
          aria-controls="primary-nav"
          onClick={() => setMenuOpen((open) => !open)}
        >
          Menu
        </button>
        <nav id="primary-nav" aria-label="Primary" className={menuOpen ? 'nav open' : 'nav'}>
          <ul>
            {links.map((item) => (
              <li key={item.href}>
                <Link href={item.href} aria-current={location.startsWith(item.href) ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
          <div className="account">
            <span className="who" title={user?.email}>
              {user?.name || user?.email}
            </span>
            <button
              type="button"
              className="button secondary"
              onClick={async () => {
                await signOut();
                navigate('/login');
              }}
            >
              Sign out
            </button>
          </div>
        </nav>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · Agent Ops`;
  }, [title]);
  return (
    <div className="page-header">
      <h1>{title}</h1>
      {children ? <div className="page-actions">{children}</div> : null}
    </div>
  );
}
