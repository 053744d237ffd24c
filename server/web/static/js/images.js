import { get, request, paths, ApiError } from './api.js';
import { cornersOf } from './geo.js';

// Garden pictures for a slow link. A picture's info (size, tile pyramid, version) is
// small; its thumbnail, preview and tiles are fetched under URLs that name the
// version (?v=), which the server marks immutable, so the browser's cache keeps them
// from one visit to the next. Images come through fetch with the token (an <img src>
// could not send it) and become blob URLs (the CSP allows blob: images). Whoever
// gets a URL here revokes it when done.

const picture = (c, g) => paths.garden(c, g) + '/image';

// pictureInfo is GET …/image/info, or null when the garden has no picture.
export async function pictureInfo(c, g, signal) {
  try {
    return await get(picture(c, g) + '/info', { signal });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

// imageURL fetches an image endpoint into a blob URL, through the browser's cache.
export async function imageURL(path, signal) {
  const res = await request('GET', path, { signal, raw: true, cache: 'default' });
  return URL.createObjectURL(await res.blob());
}

const versioned = (path, info) => (info.version ? `${path}?v=${encodeURIComponent(info.version)}` : path);

// gardenImage is what a map draws first: the preview (until the tiles are built, the
// whole picture) with the picture's size, corners and, once ready, its tiles; null
// when the garden has no picture. Info and preview are asked for at once (one round
// trip, not two); a preview of another version than info's (a new upload between the
// two) is fetched again under info's. While the tiles are being built, the whole
// picture and the tiles race: over a slow link a large picture takes minutes, its
// tiles seconds, so whichever is there first is drawn, and the whole picture's
// download stops when the tiles win. When it wins, `later` is the tiles to come.
export async function gardenImage(c, g, signal) {
  const base = picture(c, g);
  const whole = new AbortController(); // the preview's download, stopped if the tiles win
  if (signal?.aborted) whole.abort();
  signal?.addEventListener('abort', () => whole.abort(), { once: true });
  const [info, first] = await Promise.all([
    pictureInfo(c, g, signal),
    request('GET', base + '/preview', { signal: whole.signal, raw: true, cache: 'default' }).catch((err) => err),
  ]);
  if (!info) { whole.abort(); return null; }
  let res = first;
  if (!(res instanceof Response) || (info.version && !(res.headers.get('ETag') || '').includes(info.version))) {
    res = await request('GET', versioned(base + '/preview', info), { signal: whole.signal, raw: true, cache: 'default' });
  }
  const arrived = res.blob();
  let later = null;
  if (!info.ready && info.state !== 'failed') {
    arrived.catch(() => {}); // stopped when the tiles win
    later = whenTiled(c, g, signal).catch(() => null);
    // A whole download that fails leaves the tiles to wait for.
    const tiled = await Promise.race([arrived.then(() => null, () => later), later]);
    if (tiled) { whole.abort(); return tiled; }
  }
  const url = URL.createObjectURL(await arrived);
  return {
    url, ownUrl: true, width: info.width, height: info.height, info, later,
    corners: cornersOf(info.corners), coordinates: info.corners,
    tiles: info.ready ? {
      levels: info.levels, tileSize: info.tile_size, previewLevel: info.preview.level,
      load: (z, x, y, sig) => imageURL(versioned(`${base}/tiles/${z}/${x}/${y}`, info), sig),
    } : null,
  };
}

// whenTiled resolves once the picture's tiles are ready (polling info), with the
// picture to draw then; null if they cannot be built or the signal ends first.
export async function whenTiled(c, g, signal) {
  for (let wait = 2; ; wait = Math.min(wait * 1.5, 15)) {
    await sleep(wait * 1000, signal);
    const info = await pictureInfo(c, g, signal);
    if (!info || info.state === 'failed') return null;
    if (info.ready) return gardenImage(c, g, signal);
  }
}

// thumbnail is the garden's thumbnail as {url, width, height}, or null when the
// garden has no picture. Info says first whether it is built (so no request fails
// while it is), and names its version: the thumbnail itself then comes from the
// browser's cache on later visits. A picture that cannot be tiled throws the reason.
export async function thumbnail(c, g, signal) {
  for (let wait = 2; ; wait = Math.min(wait * 1.5, 15)) {
    const info = await pictureInfo(c, g, signal);
    if (!info) return null;
    if (info.ready) {
      const url = await imageURL(versioned(picture(c, g) + '/thumb', info), signal);
      return { url, width: info.thumb.width, height: info.thumb.height };
    }
    if (info.state === 'failed') throw new Error(`The picture cannot be shown small: ${info.error}`);
    await sleep(wait * 1000, signal);
  }
}

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(t); reject(new DOMException('Aborted', 'AbortError')); }, { once: true });
  });
}

export function naturalSize(url) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve({ width: img.naturalWidth, height: img.naturalHeight });
    img.onerror = () => reject(new Error('The garden picture could not be decoded.'));
    img.src = url;
  });
}
