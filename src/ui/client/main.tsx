/** The web interface's browser code: the frame (header, navigation) and the view the URL names. */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { SESSION_EVENT, signedInUser, signOut } from './api';
import { Link } from './components';
import { href, navigate, useView, type View } from './router';
import { settings } from './settings';
import { Audit } from './views/audit';
import { Login } from './views/login';
import { Manifest } from './views/manifest';
import { Registry } from './views/registry';
import { Repositories } from './views/repositories';
import { Repository } from './views/repository';
import { SignInLinks } from './sign-in';
import { Tokens } from './views/tokens';
import './style.css';

function Content({ view }: { view: View }) {
  switch (view.kind) {
    case 'repositories':
      return <Repositories q={view.q} last={view.last} />;
    case 'repository':
      return <Repository name={view.name} last={view.last} from={view.from} sort={view.sort} desc={view.desc} />;
    case 'manifest':
      return <Manifest name={view.name} reference={view.reference} />;
    case 'registry':
      return <Registry />;
    case 'audit':
      return <Audit filter={view.filter} last={view.last} />;
    case 'login':
      return <Login next={view.next} />;
    case 'tokens':
      return <Tokens />;
    case 'missing':
      return (
        <section>
          <h1>Not found</h1>
          <p>Nothing here at {view.path}. <Link href={href('/')}>See the repositories</Link>.</p>
        </section>
      );
  }
}

function title(view: View): string {
  switch (view.kind) {
    case 'repository':
      return view.name;
    case 'manifest':
      return `${view.name}${view.reference.includes(':') ? '@' : ':'}${view.reference}`;
    case 'registry':
      return 'Registry';
    case 'audit':
      return 'Audit log';
    case 'login':
      return 'Sign in';
    case 'tokens':
      return 'API tokens';
    default:
      return 'Repositories';
  }
}

function App() {
  const view = useView();
  useEffect(() => {
    document.title = `${title(view)} · berth`;
    // a new view: the keyboard and screen readers start at its heading
    document.querySelector<HTMLElement>('main')?.focus({ preventScroll: true });
    scrollTo(0, 0);
  }, [view.kind, 'name' in view ? view.name : '', 'reference' in view ? view.reference : '']);
  const [user, setUser] = useState(signedInUser);
  useEffect(() => {
    const changed = () => setUser(signedInUser());
    addEventListener(SESSION_EVENT, changed);
    return () => removeEventListener(SESSION_EVENT, changed);
  }, []);
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <Link href={href('/')} class="brand">berth</Link>
        <nav aria-label="Main">
          <Link href={href('/')} aria-current={view.kind === 'repositories' ? 'page' : undefined}>Repositories</Link>
          <Link href={href('/registry')} aria-current={view.kind === 'registry' ? 'page' : undefined}>Registry</Link>
          <Link href={href('/audit')} aria-current={view.kind === 'audit' ? 'page' : undefined}>Audit</Link>
          {user && <Link href={href('/tokens')} aria-current={view.kind === 'tokens' ? 'page' : undefined}>API tokens</Link>}
          {settings.signIn && <SignInLinks user={user} />}
          {settings.auth === 'token' && !settings.signIn &&
            (user ? (
              <button type="button" class="link" onClick={() => (signOut(), navigate(href('/')))}>Sign out {user}</button>
            ) : (
              <Link href={href('/login')}>Sign in</Link>
            ))}
          {settings.auth === 'htpasswd' && !settings.signIn && user && <span class="muted" id="signed-in">Signed in as {user}</span>}
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <Content view={view} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
