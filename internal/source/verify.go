package source

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// verify checks the OpenPGP signature required by git.verify and returns
// the signer's identity; it returns "" when verification is off.
func (s *Source) verify(repo *git.Repository, tgt target, commit *object.Commit) (string, error) {
	v := s.spec.Verify
	if v == nil {
		return "", nil
	}
	fail := func(err error) (string, error) {
		return "", s.newError(KindVerification, "verify", err,
			previousInForce+"; sign the revision with a key listed in git.verify.keysFile")
	}
	keys, err := os.ReadFile(v.KeysFile)
	if err != nil {
		return "", s.newError(KindVerification, "verify", fmt.Errorf("read git.verify.keysFile %s: %w", v.KeysFile, err), "make the file readable by syncd")
	}
	ring, err := readKeys(keys)
	if err != nil {
		return "", s.newError(KindVerification, "verify", fmt.Errorf("git.verify.keysFile %s holds no armored OpenPGP public keys: %w", v.KeysFile, err), "export the keys with gpg --armor --export")
	}
	var (
		entity *openpgp.Entity
		what   string
	)
	switch v.Mode {
	case VerifyTag:
		ref, err := repo.Reference(localRef(tgt.ref), true)
		if err != nil {
			return fail(fmt.Errorf("read tag %s: %w", tgt.tag, err))
		}
		tag, err := repo.TagObject(ref.Hash())
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return fail(fmt.Errorf("tag %s is a lightweight tag and cannot carry a signature", tgt.tag))
		}
		if err != nil {
			return fail(fmt.Errorf("read tag %s: %w", tgt.tag, err))
		}
		what = "tag " + tgt.tag
		if tag.PGPSignature == "" {
			return fail(fmt.Errorf("%s is not signed", what))
		}
		entity, err = tag.Verify(ring)
		if err != nil {
			return fail(fmt.Errorf("%s: bad signature or unknown key: %w", what, err))
		}
		if err := s.checkTagName(ref.Name(), tgt.tag, tag); err != nil {
			return "", err
		}
	default:
		what = "commit " + commit.Hash.String()
		if commit.PGPSignature == "" {
			return fail(fmt.Errorf("%s is not signed", what))
		}
		entity, err = commit.Verify(ring)
		if err != nil {
			return fail(fmt.Errorf("%s: bad signature or unknown key: %w", what, err))
		}
	}
	return signerName(entity), nil
}

// checkTagName refuses a signed tag object served under another name than
// the one it was signed for. The name is part of the signed content, so it
// binds the signature to one tag; without this check anyone who can push
// refs could point refs/tags/v2.0.0 at the signed object of v1.0.0 and
// present an old release as the newest (a replay).
func (s *Source) checkTagName(ref plumbing.ReferenceName, resolved string, tag *object.Tag) *Error {
	if tag.Name == resolved {
		return nil
	}
	return s.newError(KindVerification, "verify",
		fmt.Errorf("%s points to the signed tag object %s, which is named %q, not %q: a signed tag is valid only under its own name (a replayed tag)", ref, tag.Hash, tag.Name, resolved),
		fmt.Sprintf(previousInForce+"; delete %s, or sign a tag named %s (git tag -s %s) with a key listed in git.verify.keysFile", ref, resolved, resolved))
}

// armorBegin starts every ASCII-armored OpenPGP block.
const armorBegin = "-----BEGIN PGP "

// readKeys reads the keys of every armored block in data and returns them
// re-armored as one public key block. A file made by concatenating several
// `gpg --armor --export` outputs holds several blocks, and the openpgp and
// go-git readers would only see the first.
func readKeys(data []byte) (string, error) {
	var ring openpgp.EntityList
	text, blocks := string(data), 0
	for {
		i := strings.Index(text, armorBegin)
		if i < 0 {
			break
		}
		text = text[i:]
		block := text
		if j := strings.Index(text[len(armorBegin):], armorBegin); j >= 0 {
			block, text = text[:len(armorBegin)+j], text[len(armorBegin)+j:]
		} else {
			text = ""
		}
		blocks++
		el, err := openpgp.ReadArmoredKeyRing(strings.NewReader(block))
		if err != nil {
			return "", fmt.Errorf("armored block %d: %w", blocks, err)
		}
		ring = append(ring, el...)
	}
	switch {
	case blocks == 0:
		return "", errors.New("no armored data found")
	case len(ring) == 0:
		return "", fmt.Errorf("its %d armored block(s) hold no keys", blocks)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return "", err
	}
	for _, e := range ring {
		if err := e.Serialize(w); err != nil {
			return "", fmt.Errorf("key %s: %w", e.PrimaryKey.KeyIdString(), err)
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func signerName(e *openpgp.Entity) string {
	if e == nil || e.PrimaryKey == nil {
		return ""
	}
	id := e.PrimaryKey.KeyIdString()
	if pi := e.PrimaryIdentity(); pi != nil {
		return fmt.Sprintf("%s (key %s)", pi.Name, id)
	}
	return "key " + id
}
