// Package secret seals credentials the gateway must store and later use in the clear: the API
// keys of callers' own provider connections (BYOK, R-KEY-5). A Box encrypts with AES-256-GCM
// (crypto/aes, crypto/cipher) under a key derived with HKDF-SHA-256 from the operator's secret
// (store.secret_key), and tags the stored form with a version prefix so that values stored in
// the clear before a secret was configured still open.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// Prefix starts every sealed value: "enc:v1:" then the unpadded URL-safe base64 of the 12-byte
// nonce followed by the ciphertext and its 16-byte tag.
const Prefix = "enc:v1:"

// MinSecretLen is the shortest operator secret New accepts, in bytes.
const MinSecretLen = 16

// hkdfInfo binds derived keys to this use, so the same operator secret used elsewhere yields
// an unrelated key.
const hkdfInfo = "switchyard stored credential v1"

// Errors of Open.
var (
	// ErrNoKey: the value is sealed and the Box has no key (store.secret_key is not set).
	ErrNoKey = errors.New("secret: the value is encrypted and store.secret_key is not set")
	// ErrCorrupt: the value is sealed but does not open: another secret sealed it, or it was
	// altered.
	ErrCorrupt = errors.New("secret: the value does not decrypt with store.secret_key (another key, or altered)")
)

// Box seals and opens stored credentials. The nil *Box has no key: Seal returns the value
// unchanged and Open accepts only unsealed values. A Box is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box keyed from secret (at least MinSecretLen bytes; a random string of 32 or
// more characters is recommended), or nil and no error when secret is "" (no encryption).
func New(secret string) (*Box, error) {
	if secret == "" {
		return nil, nil
	}
	if len(secret) < MinSecretLen {
		return nil, errors.New("secret: store.secret_key must be at least 16 bytes (32 random characters recommended)")
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, hkdfInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal returns the stored form of plain: Prefix + base64(nonce || ciphertext) with a fresh
// random nonce, or plain itself when b is nil.
func (b *Box) Seal(plain string) string {
	if b == nil {
		return plain
	}
	buf := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	_, _ = rand.Read(buf) // crypto/rand never fails
	buf = b.aead.Seal(buf, buf, []byte(plain), []byte(Prefix))
	return Prefix + base64.RawURLEncoding.EncodeToString(buf)
}

// Sealed reports whether stored is a sealed value.
func Sealed(stored string) bool { return strings.HasPrefix(stored, Prefix) }

// Open returns the plain value of stored: a value without Prefix (stored in the clear) is
// returned as is; a sealed one is decrypted, or ErrNoKey when b is nil, or ErrCorrupt.
func (b *Box) Open(stored string) (string, error) {
	enc, ok := strings.CutPrefix(stored, Prefix)
	if !ok {
		return stored, nil
	}
	if b == nil {
		return "", ErrNoKey
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return "", ErrCorrupt
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(Prefix))
	if err != nil {
		return "", ErrCorrupt
	}
	return string(plain), nil
}
