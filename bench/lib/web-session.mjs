/** A POST with a JSON body (and extra headers). */
export const postJson = (body, headers = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

/** Registers `email` on the web service at `url` (an existing account is fine) and signs in: the session cookie. */
export async function signedIn(url, email, password) {
  await fetch(`${url}/api/register`, postJson({ email, password }));
  const { csrfToken } = await (await fetch(`${url}/api/auth/csrf`)).json();
  const login = await fetch(`${url}/api/auth/login`, postJson({ email, password }, { 'x-csrf-token': csrfToken }));
  const cookie = login.headers
    .getSetCookie()
    .find((c) => c.startsWith('service-session='))
    ?.split(';')[0];
  if (!cookie) throw new Error(`login failed: ${login.status}`);
  return cookie;
}
