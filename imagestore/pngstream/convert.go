package pngstream

// convert turns an unfiltered row of width pixels into 8-bit RGBA, not premultiplied,
// with image/png's results: grey and palette entries as it resolves them, tRNS
// compared as it compares, 16-bit samples by their high byte.
func (d *Decoder) convert(cdat []byte, width int, out []byte) {
	h := d.hdr
	switch {
	case h.ColorType == ctPalette:
		d.convertPalette(cdat, width, out)
	case h.ColorType == ctGrey && h.BitDepth < 8:
		d.convertGreyBits(cdat, width, out)
	case h.ColorType == ctGrey && h.BitDepth == 8:
		ty := d.trns[1]
		for x := range width {
			v := cdat[x]
			a := byte(0xff)
			if d.useTrns && v == ty {
				a = 0
			}
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = v, v, v, a
		}
	case h.ColorType == ctGrey:
		ty := uint16(d.trns[0])<<8 | uint16(d.trns[1])
		for x := range width {
			v := cdat[2*x]
			a := byte(0xff)
			if d.useTrns && uint16(v)<<8|uint16(cdat[2*x+1]) == ty {
				a = 0
			}
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = v, v, v, a
		}
	case h.ColorType == ctGreyAlpha && h.BitDepth == 8:
		for x := range width {
			v := cdat[2*x]
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = v, v, v, cdat[2*x+1]
		}
	case h.ColorType == ctGreyAlpha:
		for x := range width {
			v := cdat[4*x]
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = v, v, v, cdat[4*x+2]
		}
	case h.ColorType == ctTrue && h.BitDepth == 8:
		tr, tg, tb := d.trns[1], d.trns[3], d.trns[5]
		for x := range width {
			c := cdat[3*x : 3*x+3 : 3*x+3]
			a := byte(0xff)
			if d.useTrns && c[0] == tr && c[1] == tg && c[2] == tb {
				a = 0
			}
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = c[0], c[1], c[2], a
		}
	case h.ColorType == ctTrue:
		t := d.trns
		for x := range width {
			c := cdat[6*x : 6*x+6 : 6*x+6]
			a := byte(0xff)
			if d.useTrns && c[0] == t[0] && c[1] == t[1] && c[2] == t[2] && c[3] == t[3] && c[4] == t[4] && c[5] == t[5] {
				a = 0
			}
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = c[0], c[2], c[4], a
		}
	case h.ColorType == ctTrueAlpha && h.BitDepth == 8:
		copy(out[:4*width], cdat)
	default: // truecolour with alpha, 16 bits
		for x := range width {
			c := cdat[8*x : 8*x+8 : 8*x+8]
			o := out[4*x : 4*x+4 : 4*x+4]
			o[0], o[1], o[2], o[3] = c[0], c[2], c[4], c[6]
		}
	}
}

// convertGreyBits expands 1-, 2- and 4-bit grey.
func (d *Decoder) convertGreyBits(cdat []byte, width int, out []byte) {
	depth := uint(d.hdr.BitDepth)
	perByte := 8 / int(depth)
	scale := byte(0xff / (1<<depth - 1)) // 0xff, 0x55, 0x11
	ty := d.trns[1]
	for x := range width {
		b := cdat[x/perByte] << (uint(x%perByte) * depth)
		v := (b >> (8 - depth)) * scale
		a := byte(0xff)
		if d.useTrns && v == ty {
			a = 0
		}
		o := out[4*x : 4*x+4 : 4*x+4]
		o[0], o[1], o[2], o[3] = v, v, v, a
	}
}

// convertPalette looks up 1-, 2-, 4- and 8-bit palette indices.
func (d *Decoder) convertPalette(cdat []byte, width int, out []byte) {
	depth := uint(d.hdr.BitDepth)
	if depth == 8 {
		for x := range width {
			c := d.palette[cdat[x]]
			copy(out[4*x:4*x+4], c[:])
		}
		return
	}
	perByte := 8 / int(depth)
	for x := range width {
		b := cdat[x/perByte] << (uint(x%perByte) * depth)
		c := d.palette[b>>(8-depth)]
		copy(out[4*x:4*x+4], c[:])
	}
}
