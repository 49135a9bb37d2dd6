import { lazy, type ReactNode, Suspense, useEffect } from 'react';
import { Redirect, Route, Switch, useLocation } from 'wouter';
import { Layout } from './components/layout.js';
import { Loading } from './components/states.js';
import { useSession } from './session.js';

// Each page is its own chunk: the sign-in page does not download the workflow editor.
const LoginPage = lazy(() => import('./pages/login.js'));
const RegisterPage = lazy(() => import('./pages/register.js'));
const ForgotPasswordPage = lazy(() => import('./pages/forgot-password.js'));
const ResetPasswordPage = lazy(() => import('./pages/reset-password.js'));
const VerifyEmailPage = lazy(() => import('./pages/verify-email.js'));
const DashboardPage = lazy(() => import('./pages/dashboard.js'));
const AgentPage = lazy(() => import('./pages/agent.js'));
const WorkflowsPage = lazy(() => import('./pages/workflows.js'));
const MissionControlPage = lazy(() => import('./pages/mission-control.js'));
const CostsPage = lazy(() => import('./pages/costs.js'));
const SettingsPage = lazy(() => import('./pages/settings.js'));
const BridgePage = lazy(() => import('./pages/bridge.js'));
const PaymentsPage = lazy(() => import('./pages/payments.js'));

/** Pages for signed-in people: anyone else goes to /login and comes back afterwards. */
function Private({ children }: { children: ReactNode }) {
  const { user } = useSession();
  const [location] = useLocation();
  if (user === undefined) return <Loading label="Checking your session…" />;
  if (user === null) return <Redirect to={`/login?next=${encodeURIComponent(location + window.location.search)}`} replace />;
  return <Layout>{children}</Layout>;
}

/** Sign-in pages: a signed-in person goes straight to the dashboard. */
function Public({ children }: { children: ReactNode }) {
  const { user } = useSession();
  if (user === undefined) return <Loading label="Checking your session…" />;
  if (user) return <Redirect to="/dashboard" replace />;
  return <div className="public-shell">{children}</div>;
}

function NotFound() {
  useEffect(() => {
    document.title = 'Not found · Agent Ops';
  }, []);
  return (
    <div className="public-shell">
      <div className="card narrow">
        <h1>Page not found</h1>
        <p>
          <a href="/dashboard">Go to your agents</a>
        </p>
      </div>
    </div>
  );
}

export function App() {
  return (
    <Suspense fallback={<Loading />}>
      <Switch>
        <Route path="/">
          <Redirect to="/dashboard" replace />
        </Route>
        <Route path="/login">
          <Public>
            <LoginPage />
          </Public>
        </Route>
        <Route path="/register">
          <Public>
            <RegisterPage />
          </Public>
        </Route>
        <Route path="/forgot-password">
          <Public>
            <ForgotPasswordPage />
          </Public>
        </Route>
        <Route path="/reset-password">
          <ResetPasswordPage />
        </Route>
        <Route path="/verify-email">
          <VerifyEmailPage />
        </Route>
        <Route path="/dashboard">
          <Private>
            <DashboardPage />
          </Private>
        </Route>
        <Route path="/agents/:id">
          {(params) => (
            <Private>
              <AgentPage agentId={params.id} />
            </Private>
          )}
        </Route>
        <Route path="/workflows/:id?">
          {(params) => (
            <Private>
              <WorkflowsPage workflowId={params.id} />
            </Private>
          )}
        </Route>
        <Route path="/mission-control">
          <Private>
            <MissionControlPage />
          </Private>
        </Route>
        <Route path="/costs">
          <Private>
            <CostsPage />
          </Private>
        </Route>
        <Route path="/settings">
          <Private>
            <SettingsPage />
          </Private>
        </Route>
        <Route path="/billing">
          {/* Where the payment provider sends people back (apps/web/src/modules/billing/billing.service.ts): the billing settings tab. */}
          <Redirect to={`/settings${window.location.search}#billing`} replace />
        </Route>
        <Route path="/bridge">
          <Private>
            <BridgePage />
          </Private>
        </Route>
        <Route path="/payments">
          <Private>
            <PaymentsPage />
          </Private>
        </Route>
        <Route>
          <NotFound />
        </Route>
      </Switch>
    </Suspense>
  );
}
