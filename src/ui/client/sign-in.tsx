/**
 * auth.oidc: the header's "Sign in" (a page load of /ui/signin, which sends the browser to the
 * OpenID Provider and back to this page) and "Sign out" (a form POST to /ui/signout, which clears
 * the session cookie). The user's name comes from /ui/api/session (api.ts).
 */
import { settings } from './settings';

export function SignInLinks({ user }: { user: string | undefined }) {
  if (user) {
    return (
      <form method="post" action={`${settings.prefix}/ui/signout`} class="sign-out">
        <span class="muted" id="signed-in">Signed in as {user}</span> <button type="submit" class="link">Sign out</button>
      </form>
    );
  }
  return <a href={signInHref()}>Sign in</a>;
}

/** /ui/signin, coming back to the page shown now */
export function signInHref(): string {
  return `${settings.prefix}/ui/signin?${new URLSearchParams({ return: location.pathname + location.search })}`;
}
