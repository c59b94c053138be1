// A university's OpenID Provider for the tests: the certified `oidc-provider` package (npm), on a
// loopback port, with a login page of its own (username and password checked against the accounts
// the test gives it) and no consent step (a first-party client, as a university's own).
//
// Usage: node tests/oidc_provider.mjs '<client JSON>'  → prints {"issuer": ...} on one line.
// Test controls (outside the OpenID protocol, as a test's hands on the provider's directory):
//   POST /__test/accounts  {"<login>": {"password": ..., "claims": {"sub": ..., ...}}}
//   POST /__test/mischief  {"mode": "tamper" | "unsigned" | "expired" | "audience" | "issuer" | ""}
//     the next token response's ID token is spoiled that way (re-signed with the provider's own key
//     where the signature must stay valid), as a hostile or broken provider or network would.
import { createServer } from 'node:http';
import { generateKeyPair, exportJWK, SignJWT, decodeJwt, decodeProtectedHeader, importJWK } from 'jose';
import Provider from 'oidc-provider';

const client = JSON.parse(process.argv[2]);
let accounts = {};
let mischief = '';

const { privateKey } = await generateKeyPair('RS256', { extractable: true });
const signingJwk = { ...(await exportJWK(privateKey)), kid: 'test-op-key-1', alg: 'RS256', use: 'sig' };

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title, body) => `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escape(title)}</title>
<style>body{font-family:sans-serif;max-width:22rem;margin:2rem auto;padding:0 1rem}
label,input,button{display:block;width:100%;box-sizing:border-box;margin:.4rem 0}input{padding:.5rem}
button{padding:.6rem;background:#0b3d91;color:#fff;border:0}</style></head>
<body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: client.client_id,
    client_secret: client.client_secret,
    redirect_uris: client.redirect_uris,
    post_logout_redirect_uris: client.post_logout_redirect_uris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  jwks: { keys: [signingJwk] },
  scopes: ['openid', 'email', 'profile', 'affiliation'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'given_name', 'family_name', 'locale'],
    affiliation: ['eduperson_affiliation', 'groups', 'person_id'],
  },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false }, rpInitiatedLogout: {
    enabled: true,
    logoutSource: async (ctx, form) => {
      ctx.body = page('Sign out', `${form}<p>Sign out of the university?</p>
        <button form="op.logoutForm" type="submit" name="logout" value="yes">Yes, sign me out</button>`);
    },
  } },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  // A first-party client: no consent screen, every requested scope granted.
  loadExistingGrant: async (ctx) => {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile affiliation');
    await grant.save();
    return grant;
  },
  findAccount: async (ctx, sub) => {
    const found = Object.values(accounts).find((a) => a.claims.sub === sub);
    if (!found) return undefined;
    return { accountId: sub, claims: async () => ({ ...found.claims }) };
  },
  cookies: { keys: ['test-cookie-key'] },
  ttl: { IdToken: 300, AccessToken: 300, AuthorizationCode: 60, Session: 3600, Interaction: 600, Grant: 3600 },
});

async function spoil(idToken) {
  const claims = decodeJwt(idToken);
  const now = Math.floor(Date.now() / 1000);
  const key = await importJWK(signingJwk, 'RS256');
  const resign = (body) => new SignJWT(body).setProtectedHeader(decodeProtectedHeader(idToken)).sign(key);
  switch (mischief) {
    case 'tamper': { // a changed payload under the original signature
      const [head, , signature] = idToken.split('.');
      const body = Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url');
      return `${head}.${body}.${signature}`;
    }
    case 'unsigned': {
      const head = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
      return `${head}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    }
    case 'expired': return resign({ ...claims, iat: now - 3600, exp: now - 1800 });
    case 'audience': return resign({ ...claims, aud: 'another-service' });
    case 'issuer': return resign({ ...claims, iss: 'https://idp.elsewhere.example' });
    default: return idToken;
  }
}

// The login page and the spoiled token responses sit in front of the provider's own routes.
provider.use(async (ctx, next) => {
  const match = ctx.path.match(/^\/interaction\/([^/]+)(\/login)?$/);
  if (match) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    if (ctx.method === 'GET') {
      ctx.type = 'html';
      ctx.body = page('University sign-in', `<form method="post" action="/interaction/${escape(details.uid)}/login">
        <label for="login">Username</label><input id="login" name="login" autocomplete="username" required autofocus>
        <label for="password">Password</label><input id="password" name="password" type="password" required>
        <button type="submit">Sign in</button></form>`);
      return;
    }
    const body = await new Promise((resolve) => {
      let data = '';
      ctx.req.on('data', (chunk) => { data += chunk; });
      ctx.req.on('end', () => resolve(new URLSearchParams(data)));
    });
    const account = accounts[body.get('login')];
    if (!account || account.password !== body.get('password')) {
      ctx.type = 'html';
      ctx.status = 401;
      ctx.body = page('University sign-in', '<p role="alert">Wrong username or password.</p>');
      return;
    }
    await provider.interactionFinished(ctx.req, ctx.res, { login: { accountId: account.claims.sub } }, { mergeWithLastSubmission: false });
    return;
  }
  await next();
  if (ctx.path === '/token' && ctx.status === 200 && mischief && ctx.body?.id_token) {
    ctx.body = { ...ctx.body, id_token: await spoil(ctx.body.id_token) };
    mischief = '';
  }
});

const handle = provider.callback();
server.on('request', (req, res) => {
  if (req.method === 'POST' && req.url.startsWith('/__test/')) {
    let data = '';
    req.on('data', (chunk) => { data += chunk; });
    req.on('end', () => {
      const body = JSON.parse(data || '{}');
      if (req.url === '/__test/accounts') accounts = body;
      if (req.url === '/__test/mischief') mischief = body.mode || '';
      res.writeHead(204).end();
    });
    return;
  }
  handle(req, res);
});

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
