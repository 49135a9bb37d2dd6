import { useEffect, useState } from 'react';
import { PageHeader } from '../components/layout.js';
import { Tabs } from '../components/tabs.js';
import { ApiKeysSection } from './settings/api-keys.js';
import { BillingSection } from './settings/billing.js';
import { PasswordSection } from './settings/password.js';
import { ProfileSection } from './settings/profile.js';
import { TradingKeySection } from './settings/trading-key.js';

const SECTIONS = [
  { id: 'profile', label: 'Profile' },
  { id: 'password', label: 'Password' },
  { id: 'api-keys', label: 'API keys' },
  { id: 'trading-key', label: 'Trading key' },
  { id: 'billing', label: 'Billing and plan' },
] as const;
type SectionId = (typeof SECTIONS)[number]['id'];

/** The section a link names in its fragment (`/settings#billing`), else the profile. */
function sectionFromHash(): SectionId {
  const wanted = window.location.hash.slice(1);
  return SECTIONS.find((s) => s.id === wanted)?.id ?? 'profile';
}

/**
 * Account settings in tabs. The selected tab is kept in the URL fragment, so a bookmark, a link from another page or
 * the return from the payment provider (`/billing` → `/settings#billing`) opens the right one. Only the selected
 * section is mounted, so each loads its data when it is opened.
 */
export default function SettingsPage() {
  const [section, setSection] = useState<SectionId>(sectionFromHash);

  useEffect(() => {
    const onHashChange = () => setSection(sectionFromHash());
    window.addEventListener('hashchange', onHashChange);
    return () => window.removeEventListener('hashchange', onHashChange);
  }, []);

  const select = (id: SectionId) => {
    setSection(id);
    // replaceState: switching tabs should not fill the back button's history.
    window.history.replaceState(window.history.state, '', `${window.location.pathname}${window.location.search}#${id}`);
  };

  const label = SECTIONS.find((s) => s.id === section)?.label ?? '';
  return (
    <>
      <PageHeader title="Settings" />
      <Tabs tabs={SECTIONS} selected={section} onSelect={select} label="Settings sections" />
      <div role="tabpanel" aria-label={label} className="settings-panel">
        {section === 'profile' ? <ProfileSection /> : null}
        {section === 'password' ? <PasswordSection /> : null}
        {section === 'api-keys' ? <ApiKeysSection /> : null}
        {section === 'trading-key' ? <TradingKeySection /> : null}
        {section === 'billing' ? <BillingSection /> : null}
      </div>
    </>
  );
}
