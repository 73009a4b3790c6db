package secret

import (
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	b, err := New("correct horse battery staple 42")
	if err != nil {
		t.Fatal(err)
	}
	const plain = "sk-customer-own-credential"
	s1, s2 := b.Seal(plain), b.Seal(plain)
	if !Sealed(s1) || strings.Contains(s1, plain) || s1 == s2 {
		t.Fatalf("sealed %q and %q: want prefixed, opaque, fresh nonce each time", s1, s2)
	}
	for _, s := range []string{s1, s2} {
		if got, err := b.Open(s); err != nil || got != plain {
			t.Fatalf("Open(%q) = %q, %v", s, got, err)
		}
	}
	// A value stored in the clear (before a secret was set) opens as is.
	if got, err := b.Open(plain); err != nil || got != plain {
		t.Fatalf("Open(clear) = %q, %v", got, err)
	}
	other, _ := New("another operator secret, 32 chars")
	if _, err := other.Open(s1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("another key: %v, want ErrCorrupt", err)
	}
	flipped := []byte(s1)
	flipped[len(flipped)-3] ^= 1
	if _, err := b.Open(string(flipped)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("altered value: %v, want ErrCorrupt", err)
	}
	if _, err := b.Open(Prefix + "!!"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad base64: %v, want ErrCorrupt", err)
	}
	var none *Box
	if none.Seal(plain) != plain {
		t.Fatal("nil box must store in the clear")
	}
	if _, err := none.Open(s1); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil box opening a sealed value: %v, want ErrNoKey", err)
	}
}

func TestNew(t *testing.T) {
	if b, err := New(""); b != nil || err != nil {
		t.Fatalf("New(\"\") = %v, %v; want no box, no error", b, err)
	}
	if _, err := New("short"); err == nil {
		t.Fatal("a short secret must be refused")
	}
}
