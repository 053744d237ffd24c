// A PLY reader for point clouds: binary (either byte order) and ASCII, the vertex
// element's x, y, z, and colour from red/green/blue or a packed rgb/rgba property (as
// ROS point clouds carry it, often as the bits of a float). Points with a coordinate
// that is not finite are skipped.

const sizes = {
  char: 1, int8: 1, uchar: 1, uint8: 1, short: 2, int16: 2, ushort: 2, uint16: 2,
  int: 4, int32: 4, uint: 4, uint32: 4, float: 4, float32: 4, double: 8, float64: 8,
};
const readers = {
  char: 'getInt8', int8: 'getInt8', uchar: 'getUint8', uint8: 'getUint8', short: 'getInt16', int16: 'getInt16',
  ushort: 'getUint16', uint16: 'getUint16', int: 'getInt32', int32: 'getInt32', uint: 'getUint32', uint32: 'getUint32',
  float: 'getFloat32', float32: 'getFloat32', double: 'getFloat64', float64: 'getFloat64',
};

export function parsePLY(buffer) {
  const bytes = new Uint8Array(buffer);
  const marker = 'end_header';
  let end = -1;
  const limit = Math.min(bytes.length, 1 << 16);
  const head = new TextDecoder().decode(bytes.subarray(0, limit));
  const at = head.indexOf(marker);
  if (!head.startsWith('ply') || at < 0) throw new Error('not a PLY file');
  end = new TextEncoder().encode(head.slice(0, at + marker.length)).length;
  if (bytes[end] === 13) end++;
  if (bytes[end] !== 10) throw new Error('PLY header does not end with a newline');
  end++;
  let format = null, count = 0, inVertex = false, before = 0;
  const props = [];
  for (const line of head.slice(0, at).split(/\r?\n/)) {
    const w = line.trim().split(/\s+/);
    if (w[0] === 'format') format = w[1];
    else if (w[0] === 'element') {
      inVertex = w[1] === 'vertex';
      if (inVertex) count = parseInt(w[2], 10);
      else if (count === 0) before += parseInt(w[2], 10);
    } else if (w[0] === 'property' && inVertex) {
      if (w[1] === 'list') throw new Error('PLY vertex lists are not supported');
      if (!sizes[w[1]]) throw new Error(`unknown PLY type ${w[1]}`);
      props.push({ type: w[1], name: w[2] });
    }
  }
  if (before) throw new Error('PLY elements before the vertices are not supported');
  if (!Number.isInteger(count) || count < 0) throw new Error('PLY vertex count is missing');
  const idx = (n) => props.findIndex((p) => p.name === n);
  const ix = idx('x'), iy = idx('y'), iz = idx('z');
  if (ix < 0 || iy < 0 || iz < 0) throw new Error('PLY vertices lack x, y or z');
  const ir = idx('red'), ig = idx('green'), ib = idx('blue');
  let irgb = idx('rgb') >= 0 ? idx('rgb') : idx('rgba');
  if (irgb >= 0 && sizes[props[irgb].type] !== 4) irgb = -1; // packed colour is 4 bytes
  const hasRGB = ir >= 0 && ig >= 0 && ib >= 0;
  const positions = new Float32Array(count * 3);
  const colors = hasRGB || irgb >= 0 ? new Float32Array(count * 3) : null;
  let n = 0;
  const put = (vals, rgbBits) => {
    const x = vals[ix], y = vals[iy], z = vals[iz];
    if (!Number.isFinite(x) || !Number.isFinite(y) || !Number.isFinite(z)) return;
    positions.set([x, y, z], n * 3);
    if (colors) {
      if (hasRGB) {
        const k = props[ir].type.startsWith('float') || props[ir].type === 'double' ? 1 : 1 / 255;
        colors.set([vals[ir] * k, vals[ig] * k, vals[ib] * k], n * 3);
      } else {
        colors.set([((rgbBits >>> 16) & 255) / 255, ((rgbBits >>> 8) & 255) / 255, (rgbBits & 255) / 255], n * 3);
      }
    }
    n++;
  };
  if (format === 'ascii') {
    const text = new TextDecoder().decode(bytes.subarray(end));
    const rows = text.split(/\r?\n/);
    const f32 = new DataView(new ArrayBuffer(4));
    for (let i = 0, r = 0; i < count && r < rows.length; r++) {
      const t = rows[r].trim();
      if (!t) continue;
      const vals = t.split(/\s+/).map(Number);
      let bits = 0;
      if (irgb >= 0) {
        const p = props[irgb];
        if (p.type.startsWith('float')) { f32.setFloat32(0, vals[irgb]); bits = f32.getUint32(0); } else bits = vals[irgb] >>> 0;
      }
      put(vals, bits);
      i++;
    }
  } else if (format === 'binary_little_endian' || format === 'binary_big_endian') {
    const little = format === 'binary_little_endian';
    const stride = props.reduce((s, p) => s + sizes[p.type], 0);
    if (bytes.length - end < stride * count) throw new Error('PLY file is shorter than its header says');
    const dv = new DataView(buffer, bytes.byteOffset + end);
    const offsets = [];
    let o = 0;
    for (const p of props) { offsets.push(o); o += sizes[p.type]; }
    const vals = new Array(props.length);
    for (let i = 0; i < count; i++) {
      const b = i * stride;
      for (let k = 0; k < props.length; k++) vals[k] = dv[readers[props[k].type]](b + offsets[k], little);
      const bits = irgb >= 0 ? dv.getUint32(b + offsets[irgb], little) : 0;
      put(vals, bits);
    }
  } else {
    throw new Error(`unsupported PLY format ${format}`);
  }
  return { positions: positions.subarray(0, n * 3), colors: colors ? colors.subarray(0, n * 3) : null, count: n };
}
