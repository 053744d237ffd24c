package photo

// Decode is decode, for measuring what decoding alone allocates.
var Decode = decode
