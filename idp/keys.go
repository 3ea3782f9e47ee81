package idp

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

const keyBits = 2048

// Keys hold the key that signs tokens and the JWK set that publishes it,
// together with earlier signing keys: tokens they signed stay verifiable
// until they expire, so a key can be replaced without failing requests.
type Keys struct {
	signing *rsa.PrivateKey
	kid     string
	jwks    []byte // the JSON of the JWK set
}

// LoadKeys reads the signing key from signingKeyFile, creating the file
// (and its folder) with a new 2048-bit key when it does not exist, and reads
// the public parts of previousKeyFiles (PEM private or public RSA keys).
func LoadKeys(signingKeyFile string, previousKeyFiles []string) (*Keys, error) {
	if signingKeyFile == "" {
		return nil, errors.New("idp: a signing key file is required")
	}
	key, err := loadOrCreateKey(signingKeyFile)
	if err != nil {
		return nil, err
	}
	active, err := publicJWK(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	set := jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{active}}
	for _, f := range previousKeyFiles {
		pub, err := readPublicKey(f)
		if err != nil {
			return nil, err
		}
		j, err := publicJWK(pub)
		if err != nil {
			return nil, err
		}
		if !containsKID(set.Keys, j.KID) {
			set.Keys = append(set.Keys, j)
		}
	}
	doc, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("idp: marshal JWK set: %w", err)
	}
	return &Keys{signing: key, kid: active.KID, jwks: doc}, nil
}

// KeyID is the kid of the signing key: its RFC 7638 thumbprint.
func (k *Keys) KeyID() string { return k.kid }

// sign returns the access token for claims, typed "at+jwt" (RFC 9068) so it
// cannot be mistaken for an ID token.
func (k *Keys) sign(claims jwt.Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = k.kid
	t.Header["typ"] = "at+jwt"
	s, err := t.SignedString(k.signing)
	if err != nil {
		return "", fmt.Errorf("sign access token: %w", err)
	}
	return s, nil
}

func containsKID(keys []jwkset.JWKMarshal, kid string) bool {
	for _, k := range keys {
		if k.KID == kid {
			return true
		}
	}
	return false
}

// publicJWK describes pub as a signing key whose kid is its RFC 7638
// thumbprint, so the same key always gets the same kid, on every replica
// and after every restart.
func publicJWK(pub *rsa.PublicKey) (jwkset.JWKMarshal, error) {
	j, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{ALG: jwkset.AlgRS256, USE: jwkset.UseSig},
	})
	if err != nil {
		return jwkset.JWKMarshal{}, fmt.Errorf("idp: JWK of public key: %w", err)
	}
	m := j.Marshal()
	// The thumbprint input is the required members in lexical order, no
	// whitespace; base64url never needs JSON escaping.
	sum := sha256.Sum256(fmt.Appendf(nil, `{"e":"%s","kty":"RSA","n":"%s"}`, m.E, m.N))
	m.KID = base64.RawURLEncoding.EncodeToString(sum[:])
	return m, nil
}

func loadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("idp: read signing key: %w", err)
	}
	key, err := parsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("idp: signing key %s: %w", path, err)
	}
	return key, nil
}

// createKey writes a new key to path. It writes a temporary file and links
// it into place, which fails if path exists: replicas starting together on
// one key file end up sharing the key of whichever came first, and nobody
// ever reads a half-written file.
func createKey(path string) (*rsa.PrivateKey, error) {
	key, err := rsa.GenerateKey(rand.Reader, keyBits)
	if err != nil {
		return nil, fmt.Errorf("idp: generate signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("idp: encode signing key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idp: create signing key folder: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".signing-key-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("idp: create signing key: %w", err)
	}
	defer os.Remove(tmp.Name())
	err = pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return nil, fmt.Errorf("idp: write signing key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, fs.ErrExist) {
		return loadOrCreateKey(path)
	} else if err != nil {
		return nil, fmt.Errorf("idp: write signing key: %w", err)
	}
	return key, nil
}

func parsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, err
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T is not an RSA key", key)
	}
	return rsaKey, checkSize(&rsaKey.PublicKey)
}

func readPublicKey(path string) (*rsa.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("idp: read previous key: %w", err)
	}
	pub, err := parsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("idp: previous key %s: %w", path, err)
	}
	return pub, nil
}

// parsePublicKey accepts a private key too: an old signing key file can be
// listed as it is.
func parsePublicKey(data []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	default:
		priv, err := parsePrivateKey(data)
		if err != nil {
			return nil, err
		}
		return &priv.PublicKey, nil
	}
	if err != nil {
		return nil, err
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T is not an RSA key", key)
	}
	return pub, checkSize(pub)
}

func checkSize(pub *rsa.PublicKey) error {
	if pub.N.BitLen() < keyBits {
		return fmt.Errorf("RSA key of %d bits; at least %d are needed", pub.N.BitLen(), keyBits)
	}
	return nil
}
