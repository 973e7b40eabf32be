/** `/ui/login` (token auth): asks the registry's token issuer with the user's password; the password is not kept. */
import { useState } from 'preact/hooks';
import { signIn } from '../api';
import { href, navigate } from '../router';

export function Login({ next }: { next?: string }) {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const data = new FormData(e.target as HTMLFormElement);
    setBusy(true);
    setError(undefined);
    try {
      await signIn(String(data.get('username')), String(data.get('password')));
      navigate(next?.startsWith(href('/').replace(/\/$/, '')) ? next : href('/'));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="login">
      <h1>Sign in</h1>
      <form onSubmit={submit}>
        <label for="username">Username</label>
        <input id="username" name="username" autoComplete="username" required autoFocus />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required />
        {error && <p class="problem" role="alert">{error}</p>}
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
    </section>
  );
}
