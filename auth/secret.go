package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
)

// Password length bounds. bcrypt reads only the first 72 bytes, so longer
// passwords are refused rather than silently truncated.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 72
)

// ErrWrongPassword is returned by CheckPassword for a mismatch.
var ErrWrongPassword = errors.New("auth: wrong password")

// HashPassword returns the bcrypt hash of password.
func HashPassword(password string) ([]byte, error) {
	if len(password) < MinPasswordLen {
		return nil, fmt.Errorf("auth: password is %d characters; the minimum is %d", len(password), MinPasswordLen)
	}
	if len(password) > MaxPasswordLen {
		return nil, fmt.Errorf("auth: password is %d bytes; the limit is %d", len(password), MaxPasswordLen)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, fmt.Errorf("auth: hash password: %w", err)
	}
	return h, nil
}

// CheckPassword compares password with a bcrypt hash in constant time.
// An empty hash (an account without a password) never matches.
func CheckPassword(hash []byte, password string) error {
	if len(hash) == 0 || len(password) > MaxPasswordLen {
		return ErrWrongPassword
	}
	if err := bcrypt.CompareHashAndPassword(hash, []byte(password)); err != nil {
		return ErrWrongPassword
	}
	return nil
}

// dummyHash is compared against when the user does not exist, so that a
// login takes as long for an unknown name as for a wrong password.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("casebook-no-such-user"), bcrypt.DefaultCost)
	return h
})

// BurnPasswordCheck spends the time of one password comparison.
func BurnPasswordCheck(password string) { _ = CheckPassword(dummyHash(), password) }

// TokenPrefix starts every API token, so that a leaked one is recognisable.
const TokenPrefix = "cb_"

// NewToken returns a random secret of 256 bits, hex-encoded behind prefix.
func NewToken(prefix string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("auth: random token: %w", err)
	}
	return prefix + hex.EncodeToString(raw[:]), nil
}

// HashToken is the SHA-256 of a token, which is all the store keeps.
// Tokens are 256 random bits, so a fast hash is enough.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// LooksLikeToken reports whether s could be a token made by NewToken with
// prefix, so that garbage is refused before a database lookup.
func LooksLikeToken(s, prefix string) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != 64 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}
