// A real OpenID Connect provider for gpufleet's SSO tests: panva/oidc-provider with one
// confidential client (gpufleet), the people of an accounts file, their `groups` claim,
// a minimal sign-in form and RP-initiated logout (end_session_endpoint).
//
//   node server.js --port 0 --client-id gpufleet --client-secret s3cret \
//     --redirect-uri http://localhost:8081/oidc/callback/ \
//     --post-logout-redirect-uri http://localhost:8081/login/ --accounts accounts.json
//
// The accounts file maps a username to {sub, password, email, name, groups}; it is read
// again at every sign-in and claims request, so a test can move someone between groups
// and see the next sign-in follow. The server prints `listening <issuer>` once it serves.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: options } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    'client-id': { type: 'string', default: process.env.OIDC_TEST_CLIENT_ID || 'gpufleet' },
    'client-secret': { type: 'string', default: process.env.OIDC_TEST_CLIENT_SECRET || '' },
    'redirect-uri': { type: 'string', multiple: true, default: [] },
    'post-logout-redirect-uri': { type: 'string', multiple: true, default: [] },
    accounts: { type: 'string' },
  },
});
if (!options['client-secret'] || !options.accounts || !options['redirect-uri'].length) {
  console.error('server.js needs --client-secret, --accounts and at least one --redirect-uri');
  process.exit(2);
}

function readAccounts() {
  return JSON.parse(readFileSync(options.accounts, 'utf8'));
}

function accountBySubject(subject) {
  return Object.entries(readAccounts()).find(([, account]) => account.sub === subject);
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title, body) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;
}

const configuration = {
  clients: [{
    client_id: options['client-id'],
    client_secret: options['client-secret'],
    client_name: 'gpufleet',
    redirect_uris: options['redirect-uri'],
    post_logout_redirect_uris: options['post-logout-redirect-uri'],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  pkce: { required: () => true },
  cookies: { keys: ['gpufleet-test-provider-cookie-key'] },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out of the test provider?', `${form}
<button type="submit" form="op.logoutForm" value="yes" name="logout" id="provider-logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm" id="provider-stay">No, stay signed in</button>`);
      },
    },
  },
  interactions: {
    url(ctx, interaction) {
      return `/interaction/${interaction.uid}`;
    },
  },
  // gpufleet is the provider's own first-party client: it is granted what it asks for,
  // without a consent screen, as a company's identity provider does for its own apps.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId
      || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) {
      return ctx.oidc.provider.Grant.find(grantId);
    }
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope(ctx.oidc.params.scope || 'openid');
    await grant.save();
    return grant;
  },
  async findAccount(ctx, subject) {
    const found = accountBySubject(subject);
    if (!found) {
      return undefined;
    }
    return {
      accountId: subject,
      async claims() {
        // Read again: the claims are those of the accounts file now.
        const [username, account] = accountBySubject(subject) || found;
        return {
          sub: subject,
          preferred_username: account.preferred_username ?? username,
          name: account.name,
          email: account.email,
          email_verified: true,
          groups: account.groups || [],
        };
      },
    };
  },
  ttl: { Session: 3600, Interaction: 600, Grant: 3600, AccessToken: 600, AuthorizationCode: 60, IdToken: 600 },
};

function readForm(request) {
  return new Promise((resolve, reject) => {
    let body = '';
    request.on('data', (chunk) => { body += chunk; });
    request.on('end', () => resolve(new URLSearchParams(body)));
    request.on('error', reject);
  });
}

function loginForm(uid, error = '') {
  return page('Sign in to the test provider', `${error ? `<p id="provider-error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login" autocomplete="off">
  <label>Username <input name="username" id="provider-username" required autofocus></label>
  <label>Password <input name="password" id="provider-password" type="password" required></label>
  <button type="submit" id="provider-sign-in">Sign in</button>
</form>`);
}

function send(response, status, html) {
  response.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  response.end(html);
}

async function interaction(provider, request, response) {
  const match = request.url.match(/^\/interaction\/([\w-]+)(\/login)?$/);
  const details = await provider.interactionDetails(request, response);
  if (!match || details.uid !== match[1]) {
    send(response, 400, page('Unknown sign-in', '<p>This sign-in is not the current one.</p>'));
    return;
  }
  if (request.method === 'GET') {
    send(response, 200, loginForm(details.uid));
    return;
  }
  const form = await readForm(request);
  const account = readAccounts()[form.get('username') || ''];
  if (!account || account.password !== form.get('password')) {
    send(response, 200, loginForm(details.uid, 'Wrong username or password.'));
    return;
  }
  await provider.interactionFinished(
    request,
    response,
    { login: { accountId: account.sub } },
    { mergeWithLastSubmission: false },
  );
}

const server = http.createServer();
server.listen(Number(options.port), options.host, () => {
  const { port } = server.address();
  const issuer = `http://${options.host}:${port}`;
  const provider = new Provider(issuer, configuration);
  const callback = provider.callback();
  server.on('request', (request, response) => {
    if (request.url.startsWith('/interaction/')) {
      interaction(provider, request, response).catch((error) => {
        send(response, 500, page('Sign-in failed', `<p>${escapeHtml(error.message)}</p>`));
      });
      return;
    }
    callback(request, response);
  });
  console.log(`listening ${issuer}`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
