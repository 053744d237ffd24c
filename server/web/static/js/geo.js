// A local map projection: metres east and north of an origin on the WGS84 ellipsoid,
// with the curvature radii at the origin's latitude. Over a garden (hundreds of
// metres) it is exact to well under a millimetre per metre, and it keeps angles, so a
// drone picture placed by its corners lines up with the plants.

const A = 6378137;
const F = 1 / 298.257223563;
const E2 = F * (2 - F);
const RAD = Math.PI / 180;

export function projection(lat0, lon0) {
  const s = Math.sin(lat0 * RAD);
  const w = 1 - E2 * s * s;
  const north = (A * (1 - E2)) / (w * Math.sqrt(w)) * RAD; // metres per degree of latitude
  const east = (A / Math.sqrt(w)) * Math.cos(lat0 * RAD) * RAD; // per degree of longitude
  return {
    lat0, lon0,
    toMetres(lat, lon) {
      let dl = lon - lon0;
      if (dl > 180) dl -= 360;
      if (dl < -180) dl += 360;
      return { e: dl * east, n: (lat - lat0) * north };
    },
    toLatLon(e, n) {
      let lon = lon0 + e / east;
      if (lon > 180) lon -= 360;
      if (lon <= -180) lon += 360;
      return { lat: lat0 + n / north, lon };
    },
  };
}

// imageAffine maps image pixels (u right, v down) onto metres (e, n) from the three
// georeferenced corners: a parallelogram, so rotated and skewed pictures fit too.
// It returns [a, b, c, d, tx, ty] with e = a·u + c·v + tx, n = b·u + d·v + ty.
export function imageAffine(corners, width, height) {
  const tl = corners.top_left, tr = corners.top_right, bl = corners.bottom_left;
  return [
    (tr.e - tl.e) / width, (tr.n - tl.n) / width,
    (bl.e - tl.e) / height, (bl.n - tl.n) / height,
    tl.e, tl.n,
  ];
}

// cornersOf reads an image document's coordinates into {name: {lat, lon}}.
export function cornersOf(coordinates) {
  const out = {};
  for (const c of coordinates || []) out[c.name] = { lat: c.latitude, lon: c.longitude };
  return out;
}

export function mean(points) {
  if (!points.length) return null;
  let lat = 0, lon = 0;
  for (const p of points) { lat += p.lat; lon += p.lon; }
  return { lat: lat / points.length, lon: lon / points.length };
}
