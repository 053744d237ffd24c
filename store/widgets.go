package store

// MaxWidgetsBytes bounds one user's widgets document.
const MaxWidgetsBytes = 64 << 10
