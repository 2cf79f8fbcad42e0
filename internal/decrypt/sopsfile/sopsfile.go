package sopsfile

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/logging"
	"github.com/getsops/sops/v3/pgp"
	"github.com/getsops/sops/v3/shamir"
	"github.com/getsops/sops/v3/stores/dotenv"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	"github.com/sirupsen/logrus"

	"syncd.dev/syncd/internal/decrypt"
)

func init() {
	// The SOPS library logs through logrus to stderr; a library package
	// of syncd never logs (and a warning may quote a comment).
	logging.SetLevel(logrus.PanicLevel)
	decrypt.Register(Decrypt)
}

// store is the part of a SOPS store Decrypt uses.
type store interface {
	LoadEncryptedFile(in []byte) (sops.Tree, error)
	EmitPlainFile(in sops.TreeBranches) ([]byte, error)
}

func storeFor(f decrypt.Format) (store, error) {
	switch f {
	case decrypt.FormatYAML:
		return sopsyaml.NewStore(&config.YAMLStoreConfig{}), nil
	case decrypt.FormatJSON:
		return sopsjson.NewStore(&config.JSONStoreConfig{}), nil
	case decrypt.FormatDotenv:
		return dotenv.NewStore(&config.DotenvStoreConfig{}), nil
	}
	return nil, fmt.Errorf("SOPS format %q is not supported: use YAML, JSON or dotenv", f)
}

// Decrypt decrypts data, a SOPS file of format f: it recovers the data
// key with k, decrypts every value, checks the MAC and emits the plain
// file. Errors never quote a value.
func Decrypt(k *decrypt.Keys, data []byte, f decrypt.Format) (decrypt.Result, error) {
	st, err := storeFor(f)
	if err != nil {
		return decrypt.Result{}, err
	}
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		return decrypt.Result{}, fmt.Errorf("not a SOPS %s file: %s", f, loadError(err))
	}
	key, err := dataKey(k, tree.Metadata)
	if err != nil {
		return decrypt.Result{}, err
	}
	rec := &recorder{Cipher: aes.NewCipher(), seen: map[string]bool{}}
	mac, err := tree.Decrypt(key, rec)
	if err != nil {
		return decrypt.Result{}, errors.New("a value cannot be decrypted with the file's data key: the file is damaged or was edited by hand; encrypt it again with sops")
	}
	if err := checkMAC(tree.Metadata, key, mac); err != nil {
		return decrypt.Result{}, err
	}
	plain, err := st.EmitPlainFile(tree.Branches)
	if err != nil {
		return decrypt.Result{}, fmt.Errorf("cannot write the decrypted %s back out: %s", f, loadError(err))
	}
	return decrypt.Result{Plain: plain, Values: rec.values}, nil
}

// checkMAC compares the MAC of the decrypted values with the one the file
// stores (encrypted with the data key and the file's lastmodified time).
func checkMAC(md sops.Metadata, key []byte, mac string) error {
	stored, err := aes.NewCipher().Decrypt(md.MessageAuthenticationCode, key, md.LastModified.Format(time.RFC3339))
	if err != nil {
		return errors.New("the file's MAC cannot be decrypted: the file is damaged or its sops.lastmodified was edited; encrypt it again with sops")
	}
	if s, _ := stored.(string); s != mac {
		return errors.New("the file's MAC does not match its values: the file was changed after it was encrypted (edit it with `sops`, never by hand); nothing from it is used")
	}
	return nil
}

// loadError is the text of a store's parse error; the YAML and JSON
// parsers name lines and types, not values.
func loadError(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// identity are the additional data (a value's path, as SOPS writes it)
// of the fields that name an object: they are printed wherever the
// object is named, so they are not recorded as values to hide (a
// document encrypted whole would otherwise hide every object's
// apiVersion).
var identity = map[string]bool{
	"apiVersion:": true, "kind:": true, "metadata:name:": true, "metadata:namespace:": true,
}

// recorder is a SOPS cipher that remembers every value it decrypts,
// except the fields that name an object.
type recorder struct {
	aes.Cipher
	seen   map[string]bool
	values []string
}

var _ sops.Cipher = (*recorder)(nil)

// Decrypt decrypts with AES256-GCM and records the plaintext.
func (r *recorder) Decrypt(ciphertext string, key []byte, additionalData string) (any, error) {
	v, err := r.Cipher.Decrypt(ciphertext, key, additionalData)
	if err != nil {
		return nil, err
	}
	if _, comment := v.(sops.Comment); comment || identity[additionalData] {
		return v, nil
	}
	s := fmt.Sprint(v)
	if s != "" && !r.seen[s] {
		r.seen[s] = true
		r.values = append(r.values, s)
	}
	return v, nil
}

// dataKey recovers the file's data key with k: from the one key group,
// or by combining the parts of enough key groups (Shamir).
func dataKey(k *decrypt.Keys, md sops.Metadata) ([]byte, error) {
	var parts [][]byte
	var missing []string
	for _, group := range md.KeyGroups {
		part, ok := groupPart(k, group)
		if !ok {
			missing = append(missing, recipients(group))
			continue
		}
		parts = append(parts, part)
	}
	if len(md.KeyGroups) == 0 {
		return nil, errors.New("the file has no key groups: it was not encrypted for anyone")
	}
	need := 1
	if len(md.KeyGroups) > 1 {
		need = max(md.ShamirThreshold, 1)
	}
	if len(parts) < need {
		return nil, fmt.Errorf("no key in the app's keysFile decrypts it: it is encrypted for %s; add one of their private keys to decryption.keysFile, or encrypt the file for a key syncd has", strings.Join(missing, "; "))
	}
	if len(md.KeyGroups) == 1 {
		return parts[0], nil
	}
	key, err := shamir.Combine(parts)
	if err != nil {
		return nil, errors.New("the key groups' parts do not combine into the data key: the file is damaged; encrypt it again with sops")
	}
	return key, nil
}

// groupPart decrypts the group's part of the data key with the first of
// its master keys k holds a private key for.
func groupPart(k *decrypt.Keys, group sops.KeyGroup) ([]byte, bool) {
	for _, mk := range group {
		var part []byte
		var err error
		switch t := mk.(type) {
		case *sopsage.MasterKey:
			part, err = k.AgeDataKey(t.EncryptedKey)
		case *pgp.MasterKey:
			part, err = k.PGPDataKey(t.EncryptedKey)
		default:
			continue
		}
		if err == nil {
			return part, true
		}
	}
	return nil, false
}

// recipients names a key group's master keys (public: age recipients,
// OpenPGP fingerprints, KMS key names) for an error.
func recipients(group sops.KeyGroup) string {
	var out []string
	for _, mk := range group {
		out = append(out, keyName(mk))
	}
	if len(out) == 0 {
		return "nobody"
	}
	return strings.Join(out, ", ")
}

func keyName(mk keys.MasterKey) string {
	switch t := mk.(type) {
	case *sopsage.MasterKey:
		return "age " + t.Recipient
	case *pgp.MasterKey:
		return "OpenPGP " + t.Fingerprint
	}
	return mk.TypeToIdentifier() + " " + mk.ToString() + " (not supported by syncd: use age or OpenPGP)"
}
