// Package failure owns the canonical failure classes of requirements.md R-ERR and the *Error
// type that carries one. Whether a failure fails over (R-FAIL-5..7) and whether it counts on a
// circuit (R-CIRCUIT-3) are methods of the class, decided here once; every other package asks
// the class and never reads a raw provider error.
package failure
