import { get, paths, ApiError } from './api.js';
import { cornersOf } from './geo.js';

// Garden pictures arrive as data URLs inside JSON; they are turned into blob URLs
// (the CSP allows blob: images, not data:) and kept for the session, so the home
// page's thumbnail and the garden page share one download.
const cache = new Map();

export function gardenImage(c, g, signal) {
  const key = `${c}/${g}`;
  if (!cache.has(key)) {
    const p = load(c, g, signal);
    cache.set(key, p);
    p.catch(() => cache.delete(key));
  }
  return cache.get(key);
}

export function forgetImage(c, g) {
  const key = `${c}/${g}`;
  const p = cache.get(key);
  cache.delete(key);
  p?.then((img) => img && URL.revokeObjectURL(img.url), () => {});
}

async function load(c, g, signal) {
  let doc;
  try {
    doc = await get(paths.garden(c, g) + '/image', { signal });
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null; // no picture yet
    throw err;
  }
  const blob = dataURLToBlob(doc.image);
  const url = URL.createObjectURL(blob);
  const { width, height } = await naturalSize(url);
  return { url, width, height, corners: cornersOf(doc.coordinates), coordinates: doc.coordinates };
}

export function dataURLToBlob(dataURL) {
  const comma = dataURL.indexOf(',');
  const bin = atob(dataURL.slice(comma + 1));
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Blob([bytes], { type: 'image/png' });
}

export function naturalSize(url) {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve({ width: img.naturalWidth, height: img.naturalHeight });
    img.onerror = () => reject(new Error('The garden picture could not be decoded.'));
    img.src = url;
  });
}
