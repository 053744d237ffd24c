// The API client: the token lives in sessionStorage (or localStorage when the user
// asked to stay signed in) and travels only in the Authorization header, never in a
// URL. Errors become ApiError carrying the problem's detail, ready to show.

const KEY = 'gardend.session';

export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    super(problem.detail || problem.title || `The server answered ${status}.`);
    this.status = status;
    this.problem = problem;
    this.fields = problem.errors || {};
    this.retryAfter = retryAfter; // seconds, from Retry-After (503), or undefined
  }
}

function read(store) {
  try {
    const s = JSON.parse(store.getItem(KEY));
    if (s && typeof s.token === 'string' && Date.parse(s.expiry) > Date.now()) return s;
  } catch { /* unreadable: treat as signed out */ }
  store.removeItem(KEY);
  return null;
}

export function session() {
  return read(sessionStorage) || read(localStorage);
}

export function saveSession(login, username, remember) {
  clearSession();
  const s = { token: login.token, expiry: login.expiry, username };
  (remember ? localStorage : sessionStorage).setItem(KEY, JSON.stringify(s));
}

export function clearSession() {
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

// onSignedOut is called when the server no longer accepts the token.
let signedOut = () => {};
export function onSignedOut(fn) { signedOut = fn; }

// request sends one API call; raw returns the Response (streams, binary bodies).
// blob sends a Blob as the body with its own type (photos); headers adds others
// (Idempotency-Key); cache is the fetch cache mode (no-store unless said: only images
// whose URLs name their version are for the browser to keep).
export async function request(method, path, { body, blob, signal, raw, headers: extra, cache } = {}) {
  const headers = { Accept: 'application/json', ...extra };
  const s = session();
  if (s) headers.Authorization = 'Token ' + s.token;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (blob) headers['Content-Type'] = blob.type;
  let res;
  try {
    res = await fetch(path, {
      method, headers, signal, cache: cache || 'no-store', credentials: 'omit',
      body: blob || (body === undefined ? undefined : JSON.stringify(body)),
    });
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new ApiError(0, { detail: 'The server cannot be reached. Check the connection to the gardend box and try again.' });
  }
  if (!res.ok) {
    let problem = {};
    try { problem = await res.json(); } catch { problem = {}; }
    if (typeof problem !== 'object' || problem === null) problem = {};
    if (res.status === 401 && s) {
      clearSession();
      signedOut('Your session has ended. Please log in again.');
    }
    const retry = Number(res.headers.get('Retry-After'));
    throw new ApiError(res.status, problem, retry > 0 ? retry : undefined);
  }
  if (raw) return res;
  const text = await res.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path, opts) => request('GET', path, opts);
export const post = (path, body, opts) => request('POST', path, { ...opts, body });
export const put = (path, body, opts) => request('PUT', path, { ...opts, body });
export const del = (path, opts) => request('DELETE', path, opts);

// lines reads an NDJSON response line by line as it arrives, calling onLine with each
// parsed object (or with {badLine: text} for a line that is not JSON).
export async function lines(path, onLine, { signal } = {}) {
  return readLines(await request('GET', path, { signal, raw: true }), onLine);
}

export async function readLines(res, onLine) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  const emit = (text) => {
    if (!text.trim()) return;
    let v;
    try { v = JSON.parse(text); } catch { v = { badLine: text }; }
    onLine(v);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      emit(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  }
  emit(buf + decoder.decode());
}

// Paths of the API, in one place.
export const paths = {
  company: (c) => `/companies/${c}`,
  garden: (c, g) => `/companies/${c}/gardens/${g}`,
  beds: (c, g) => `/companies/${c}/gardens/${g}/beds`,
  plants: (c, g, b) => `/companies/${c}/gardens/${g}/beds/${b}/plants`,
  pointcloud: (c, g, b, p) => `/companies/${c}/gardens/${g}/beds/${b}/plants/${encodeURIComponent(p)}/pointcloud`,
  logs: (c, g) => `/companies/${c}/gardens/${g}/logs`,
  log: (c, g, id) => `/companies/${c}/gardens/${g}/logs/${id}`,
  photos: (c, g, id) => `/companies/${c}/gardens/${g}/logs/${id}/photos`,
  photo: (c, g, id, p) => `/companies/${c}/gardens/${g}/logs/${id}/photos/${p}`,
  export: (c, g, file) => `/companies/${c}/gardens/${g}/export/${file}`,
};
